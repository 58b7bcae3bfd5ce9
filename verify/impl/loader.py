r"""Load a user's implementation under test from ``--impl FAMILY=SPEC`` (CLI) or ``--rnn-verify-impl`` (plugin).

``SPEC`` is ``module.path:Name`` (imported with the current ``sys.path``) or
``path/to/file.py:name`` (loaded from that file); ``Name`` may be dotted
(``Outer.factory``). ``FAMILY`` is a family of :mod:`verify.impl` -- which sets its
*primary* part (``uoro`` -> ``uoro.uoro``, ``rtrl`` -> ``rtrl.rtrl``, ``truncation``
-> ``truncation.tbptt``, ``reference`` -> ``reference.adjoint``, ``fpp`` ->
``fpp.eq7_gradients``, ``device`` -> ``device.runner``) -- a ``family.field``
(``truncation.model_states``), or the alias ``tbptt`` (``truncation.tbptt``).

What is loaded is checked before any claim runs, and every problem is an
:class:`~verify.errors.ImplementationError` naming the option, the spec and what is
wrong (the CLI exits 2):

* no such module, file or attribute; importing it raised;
* not something the field can hold, or a function whose signature does not take the
  arguments the toolkit calls it with (:func:`verify.impl.coerce_part`);
* an online estimator (RTRL, truncated BPTT, UORO ...) that violates the estimator
  contract (:func:`verify.estimators.online.check_contract`: dtype, device, shapes,
  purity, bounded state) on a small problem -- named as such before any statistics;
* an exact reference (``reference.adjoint``) whose result on a small problem does not
  have the gradient's shape.

Every loaded part carries its provenance (:class:`verify.impl.Source`: the spec, the
module, the file that defines it and that file's SHA-256), which the report and
``results.json`` print next to each claim that exercised it.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

from verify import stop
from verify.errors import ImplementationError, InvalidArgument, NotApplicable, VerifyError
from verify.estimators.noise import check_leak, factors, has_noise_hook
from verify.estimators.online import ContractViolation, check_contract
from verify.impl import DEFAULT, FAMILIES, Implementations, Source, build, family_class, field_names
from verify.impl.capabilities import unsupported
from verify.impl.jax_route import missing_extra
from verify.model.builders import random_problem
from verify.text import safe_repr, safe_str, type_name

__all__ = [
    "ALIASES",
    "ESTIMATORS",
    "load_implementations",
    "load_object",
    "parse_impl_arg",
    "resolve_target",
    "validate_part",
]

#: the parts that hold online-estimator factories (put through the estimator contract on load)
ESTIMATORS = (
    "rtrl.rtrl",
    "rtrl.snap",
    "rtrl.rflo",
    "rtrl.eprop",
    "truncation.tbptt",
    "truncation.truncated_model",
    "uoro.uoro",
    "uoro.preactivation",
    "uoro.kfrtrl",
    "uoro.ok",
)

#: short names accepted for a ``family.field``
ALIASES = {
    "tbptt": "truncation.tbptt",
    "kfrtrl": "uoro.kfrtrl",
    "ok": "uoro.ok",
    "snap": "rtrl.snap",
    "rflo": "rtrl.rflo",
    "eprop": "rtrl.eprop",
}


def resolve_target(name: str, option: str = "--impl") -> str:
    """``FAMILY``, ``family.field`` or an alias -> ``family.field``; :class:`InvalidArgument` otherwise."""
    if name in ALIASES:
        return ALIASES[name]
    fam, dot, fld = name.partition(".")
    if fam not in FAMILIES:
        known = ", ".join([*FAMILIES, *ALIASES])
        raise InvalidArgument(option, name, f"FAMILY must be one of {known} (or family.field)")
    if not dot:
        return f"{fam}.{family_class(fam).PRIMARY}"
    if fld not in field_names(fam):
        raise InvalidArgument(option, name, f"{fam} has the fields {', '.join(field_names(fam))}")
    return name


def parse_impl_arg(text: str, option: str = "--impl") -> tuple[str, str]:
    """``"uoro=mypkg.mod:MyUORO"`` -> ``("uoro.uoro", "mypkg.mod:MyUORO")``."""
    name, eq, spec = text.partition("=")
    if not eq or not name.strip() or not spec.strip():
        raise InvalidArgument(option, text, "expected FAMILY=module.path:Name or FAMILY=path/to/file.py:name")
    try:
        target = resolve_target(name.strip(), option)
    except InvalidArgument as exc:  # name the whole argument, not only its FAMILY part
        raise InvalidArgument(option, text, exc.reason) from None
    return target, spec.strip()


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def _is_file_spec(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where


def _import_file(path: Path, err: Any) -> ModuleType:
    if not path.is_file():
        raise err(f"no such file {str(path)!r}")
    digest = _sha256(str(path))[:12]
    modname = f"_rnn_verify_impl_{path.stem.replace('-', '_')}_{digest}"
    if modname in sys.modules:  # the same file content loaded before (e.g. two fields from one file)
        return sys.modules[modname]
    spec = importlib.util.spec_from_file_location(modname, path)
    if spec is None or spec.loader is None:
        raise err(f"cannot load {str(path)!r} as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[modname] = module  # dataclasses and pickling look the module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:  # whatever the module raised is its error; a signal to rnn-verify is a stop
        del sys.modules[modname]
        stop.reraise_if_stopped(exc)
        raise err(f"executing {str(path)!r} raised {_describe(exc)}") from None
    stop.raise_pending()  # a stop the module swallowed
    return module


def _describe(exc: BaseException) -> str:
    """An exception of user code in words; ``SystemExit`` says that the code tried to end the process.

    Never raises: a message whose ``__str__``/``__repr__`` raises is named by its type
    (:func:`verify.text.safe_str`); the text is cleaned (:func:`verify.text.clean`).
    """
    if isinstance(exc, SystemExit):
        return (
            f"SystemExit({safe_repr(exc.code)}): the code called sys.exit() (it must not decide rnn-verify's exit "
            "status)"
        )
    if isinstance(exc, KeyboardInterrupt | stop.Stop):
        return f"{type_name(exc)}: raised by the code itself, no signal was delivered to rnn-verify"
    hint = missing_extra(exc.name) if isinstance(exc, ModuleNotFoundError) else None
    if hint is not None:  # a JAX-route module missing: the optional extra, in one line
        return f"ModuleNotFoundError: {hint}"
    return f"{type_name(exc)}: {safe_str(exc)}"


def load_object(target: str, spec: str, option: str = "--impl", root: str | None = None) -> tuple[Any, Source]:
    """Import what ``spec`` names; returns it with its :class:`~verify.impl.Source` (file and SHA-256).

    A relative ``path/to/file.py`` is read from ``root`` where given (a worker process loading the specs of a run
    started in another folder), else from the current folder.
    """

    def err(reason: str) -> ImplementationError:
        return ImplementationError(target, spec, reason, option=option)

    where, colon, attr = spec.rpartition(":")
    if not colon or not where or not attr or (len(where) == 1 and where.isalpha()):  # "C:\x.py" has no ":name"
        raise err("expected module.path:Name or path/to/file.py:name (the object after the last ':')")
    if _is_file_spec(where):
        path = Path(where)
        module = _import_file(Path(root) / path if root and not path.is_absolute() else path, err)
        modname = f"file {where}"
    else:
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            hint = missing_extra(exc.name)  # jax, jaxlib, equinox, flax: the optional extra, in one line
            raise err(hint or f"no module named {exc.name or where!r} (is it installed, or on PYTHONPATH?)") from None
        except BaseException as exc:  # sys.exit() in user code is its error, never our exit status
            stop.reraise_if_stopped(exc)
            raise err(f"importing {where!r} raised {_describe(exc)}") from None
        stop.raise_pending()
        modname = where
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            have = sorted(n for n in vars(module) if not n.startswith("_"))[:12]
            raise err(f"{modname} has no attribute {attr!r} (it has {', '.join(have) or 'no public names'})")
        obj = getattr(obj, part)
    try:
        file = inspect.getsourcefile(obj) or getattr(module, "__file__", None) or ""
    except TypeError:  # an instance (e.g. a Batch1 wrap): the file that defines it is the spec's module
        file = getattr(module, "__file__", None) or ""
    file = os.path.abspath(file) if file else ""
    sha = _sha256(file) if file and os.path.isfile(file) else ""
    return obj, Source(target, spec, getattr(module, "__name__", modname), file, sha)


# --------------------------------------------------------------- load checks
def _small_problem(kind: str = "elman-tanh") -> tuple[Any, torch.Tensor]:
    return random_problem(kind, n=3, d=2, T=5, generator=torch.Generator().manual_seed(0))


def _supported_problem(est: Any) -> tuple[Any, torch.Tensor]:
    """The load check's small problem of the first cell ``est`` supports (elman-tanh, gru, lstm, linear,
    elman-relu): a GRU-only or LSTM-only implementation is checked on its own cell, not refused for lacking
    Elman (issue 37). :class:`NotApplicable` with every reason when it supports none."""
    reasons = []
    for kind in LOAD_CHECK_CELLS:
        P, th = _small_problem(kind)
        why = unsupported(est, P, th)
        if why is None:
            return P, th
        reasons.append(f"{kind}: {why}")
    raise NotApplicable("load check", "; ".join(reasons))


#: the cells the load check tries, in order, until the implementation supports one
LOAD_CHECK_CELLS = ("elman-tanh", "gru", "lstm", "linear", "elman-relu")


def _estimator_args(target: str) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if target in ("truncation.tbptt", "truncation.truncated_model"):
        return (2,), {}
    return (), {}


def _probe_uoro(est: Any, P: Any, th: torch.Tensor) -> None:
    """UORO-specific load probes: the factors' layout (s̃ over the n state coordinates, θ̃ over all p parameters in
    θ's layout -- readout columns included, zero) and, with a noise hook, no randomness outside it unless the
    estimator declares ``random_start = True``. Mistakes raise :class:`~verify.errors.InvalidArgument`."""
    if unsupported(est, P, th) is not None:  # an estimator that does not run this problem: nothing to probe here
        return
    state = est.init(P, th, torch.Generator().manual_seed(0), samples=2)
    state, _ = est.step(P, th, state, 1, torch.Generator().manual_seed(0))
    factors(est, P, state, 2)  # InvalidArgument naming s_tilde/theta_tilde and the shapes expected
    if has_noise_hook(est) and not getattr(est, "random_start", False):
        shape = tuple(est.noise_shape(P))
        table = (
            2.0 * torch.randint(0, 2, (est.noise_draws(3), 4, *shape), generator=torch.Generator().manual_seed(1)) - 1.0
        ).to(P.dtype)
        try:
            check_leak(est, P, th, table, 3, what="the claims on tabulated noise")
        except InvalidArgument as exc:
            raise InvalidArgument(
                exc.argument,
                exc.value,
                f"{exc.reason}; or, where a random start s~_0, theta~_0 is meant, declare "
                "random_start = True (those claims are then SKIPPED with the reason)",
            ) from None


def validate_part(impls: Implementations, target: str, option: str = "--impl") -> None:
    """Exercise ``impls``'s part ``target`` once on a small problem; :class:`ImplementationError` if it breaks.

    Estimator factories are built (``k = 2`` for truncations) and put through the
    online-estimator contract (:func:`~verify.estimators.online.check_contract`);
    ``reference.adjoint`` must take ``per_step`` and return shapes (p,) and (T, p). Other parts are
    checked by their signature only (:func:`verify.impl.coerce_part`).
    """
    src = impls.source(target)
    spec = src.spec if src is not None else "?"

    def err(reason: str) -> ImplementationError:
        return ImplementationError(target, spec, reason, option=option)

    part = impls.part(target)
    P, th = _small_problem()
    if target in ESTIMATORS:
        args, kwargs = _estimator_args(target)
        try:
            est = build(part, target, *args, **kwargs)
        except NotApplicable as exc:
            raise err(f"cannot build an estimator: {safe_str(exc.reason)}") from None
        except BaseException as exc:  # sys.exit(), KeyboardInterrupt ... of the code: its error (a signal: a stop)
            stop.reraise_if_stopped(exc)
            raise err(f"building the estimator raised {_describe(exc)}") from None
        try:
            try:
                P, th = _supported_problem(est)
            except NotApplicable as exc:
                raise err(
                    f"supports none of the load check's small problems ({safe_str(exc.reason)}); every claim "
                    "would be SKIPPED"
                ) from None
            check_contract(est, P, th, samples=2, steps=3)
            if target in ("uoro.uoro", "uoro.preactivation"):
                _probe_uoro(est, P, th)
        except ContractViolation as exc:
            raise err(f"violates the online-estimator contract: {safe_str(exc)}") from None
        except VerifyError as exc:
            raise err(f"on a small {P.cell.describe()} problem: {safe_str(exc)}") from None
        except BaseException as exc:
            stop.reraise_if_stopped(exc)
            raise err(f"on a small {P.cell.describe()} problem it raised {_describe(exc)}") from None
    elif target == "reference.adjoint":
        _probe_adjoint(part, P, th, err)
    stop.raise_pending()  # a stop that the code under test swallowed


#: what the claims call ``reference.adjoint`` with, in the user's terms
_ADJOINT_NEEDS = (
    "the claim reference.adjoint calls adjoint(problem, theta, per_step=True) and compares the per-step "
    "gradients too: per_step=False (the default) returns dL/dtheta, shape (p,); per_step=True returns the T "
    "per-step gradients dl_t/dtheta, shape (T, p), row t-1 for step t (their sum is dL/dtheta)"
)


def _probe_adjoint(part: Any, P: Any, th: torch.Tensor, err: Any) -> None:
    """``reference.adjoint`` on a small problem: ``(p,)`` without ``per_step``, ``(T, p)`` with ``per_step=True``."""
    try:
        inspect.signature(part).bind(P, th, per_step=True)
    except TypeError:
        raise err(f"adjoint(problem, theta) takes no argument per_step; {_ADJOINT_NEEDS}") from None
    except ValueError:  # no signature to inspect: the calls tell
        pass
    for per_step, want, shown in ((False, (P.p,), f"(p,) = ({P.p},)"), (True, (P.T, P.p), f"(T, p) = {(P.T, P.p)}")):
        call = f"adjoint(problem, theta{', per_step=True' if per_step else ''})"
        try:
            g = part(P, th, per_step=True) if per_step else part(P, th)
        except BaseException as exc:
            stop.reraise_if_stopped(exc)
            raise err(f"{call} raised {_describe(exc)}") from None
        if not isinstance(g, torch.Tensor) or tuple(g.shape) != want:
            got = tuple(g.shape) if isinstance(g, torch.Tensor) else type(g).__name__
            raise err(f"{call} returned {got}, expected a tensor of shape {shown}; {_ADJOINT_NEEDS}")


def load_implementations(
    args: Sequence[str],
    base: Implementations = DEFAULT,
    option: str = "--impl",
    validate: bool = True,
    root: str | None = None,
) -> Implementations:
    """``base`` with every ``FAMILY=SPEC`` of ``args`` loaded into its part (and checked, see :func:`validate_part`).

    ``root``: the folder relative file specs are read from (default: the current one; see :func:`load_object`).
    """
    impls = base
    seen: dict[str, str] = {}
    for text in args:
        target, spec = parse_impl_arg(text, option)
        if target in seen:
            raise InvalidArgument(option, text, f"{target} is already given ({seen[target]})")
        seen[target] = text
        try:
            obj, source = load_object(target, spec, option, root)
            fam, _, fld = target.partition(".")
            try:
                impls = impls.with_part(fam, fld, obj, source=source)
            except InvalidArgument as exc:
                raise ImplementationError(target, spec, exc.reason, option=option) from None
            if validate:
                validate_part(impls, target, option)
        except ImplementationError as exc:  # echo FAMILY as the user wrote it ('uoro=', not 'uoro.uoro=')
            typed = text.partition("=")[0].strip()
            if typed == exc.name:
                raise
            fam, _, fld = exc.name.partition(".")
            reason = exc.reason if fld == fam else f"(the part {exc.name}) {exc.reason}"
            raise ImplementationError(typed, exc.spec, reason, option=exc.option) from exc.__cause__
    return impls
