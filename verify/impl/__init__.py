r"""The implementation under test: one frozen value per claim family (DESIGN.md "Implementation under test").

Every check exercises functions or estimators; which ones is a field of its family's
dataclass, and the toolkit's own implementations are the defaults. A mutant of the
catalog (:mod:`verify.impl.mutants`) is ``dataclasses.replace(default, field=broken)`` (or
:meth:`FamilyImpl.with_part`, which also updates the fields derived from it); a user's
code is another value of the same type -- given on the command line
(``rnn-verify run --impl uoro=mypkg.module:MyUORO``, :mod:`verify.impl.loader`), to
the pytest plugin (``--rnn-verify-impl``) or in code::

    from dataclasses import replace
    from verify.impl import DEFAULT, Implementations
    from verify.config import RunConfig

    impls = DEFAULT.with_part("uoro", "uoro", MyUORO)     # or DEFAULT.replace(uoro=UOROImpl(uoro=MyUORO))
    config = RunConfig(impls=impls)

A check reads its family's value from ``config.impls`` and never reaches around it
to a concrete class; its negative controls are mutants, i.e. other values of the
same type run through the very same comparison.

==============  ===========================================  =======================================================
family          fields (default)                             what a field is called with
==============  ===========================================  =======================================================
``reference``   ``adjoint`` (:func:`~verify.oracles.bptt.    ``adjoint(problem, theta, per_step=False)`` -> ∇L (p,)
                adjoint_gradient`), ``influence``            or the per-step gradients (T, p);
                (:func:`~verify.oracles.bptt.influence_      ``influence(problem, theta)`` -> ∂s_t/∂θ (T, *B, n, p)
                matrices`)
``rtrl``        ``rtrl`` (:class:`~verify.estimators.RTRL`)  ``rtrl()`` -> an online estimator (exact, frozen θ);
                ``snap`` (:class:`~.SnAp`), ``rflo``         ``snap(order=n)``, ``rflo()``, ``eprop()`` -> online
                (:class:`~.RFLO`), ``eprop`` (:class:`~.     estimators of RTRL's deterministic approximations
                EProp`)                                      (declared biased)
``truncation``  ``tbptt`` (:class:`~.TBPTT`)                 ``tbptt(k)``, ``truncated_model(k)`` -> online
                ``truncated_model``, ``model_states``,       estimators; ``model_states(problem, theta, k)`` ->
                ``model_gradient``, ``tbptt_gradient``,      (T, n); ``model_gradient`` / ``tbptt_gradient``
                ``certificate``                              ``(problem, theta, k)`` -> ∇p_T (p,);
                                                             ``certificate(problem, theta)`` -> a certificate
``uoro``        ``uoro`` (:class:`~.UORO`),                  ``uoro(rank=r, block=T)`` -> an online estimator
                ``preactivation``, ``reinforce``,            (``rank``/``block`` only where a claim needs them);
                ``framework``, ``kfrtrl`` (:class:`~.        ``reinforce(sigma, baseline=True)`` -> ``.sample``;
                KFRTRL`), ``ok`` (:class:`~.OK`)             ``kfrtrl()`` -> KF-RTRL (unbiased, noise hook);
                                                             ``ok(rank=r)`` -> OK (unbiased, noise hook)
``fpp``         ``eq7_gradients``, ``sampler``,              eq. (7) (:data:`verify.fpp.objective.SampleGradFn`),
                ``multipliers``, ``learner``                 ``sampler(n, T, size, generator)``,
                (:func:`~verify.fpp.reproduction.            ``multipliers(problem, theta, states)``;
                fpp_learner`)                                ``learner(model, cfg, inputs, targets, theta0, lrs,
                                                             generator)`` -> online losses (R, steps) (§5)
``device``      ``runner``                                   ``runner(algorithm, inputs)`` -> the candidate's rows
==============  ===========================================  =======================================================

Setting a family's *primary* field (``reference.adjoint``, ``rtrl.rtrl``,
``truncation.tbptt``, ``uoro.uoro``, ``fpp.eq7_gradients``, ``device.runner``) is
what ``--impl FAMILY=SPEC`` does. Derived fields follow the part they derive from:
a truncated-BPTT estimator given for ``truncation.tbptt`` also provides
``tbptt_gradient`` (its estimate at the last step), a truncated-model estimator
given for ``truncated_model`` provides ``model_gradient``.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from verify.errors import InvalidArgument, NotApplicable
from verify.estimators.framework import FrameworkUORO
from verify.estimators.kfrtrl import KFRTRL
from verify.estimators.local import RFLO, EProp
from verify.estimators.ok import OK
from verify.estimators.reinforce import Reinforce
from verify.estimators.rtrl import RTRL
from verify.estimators.snap import SnAp
from verify.estimators.tbptt import TBPTT, TruncatedModel
from verify.estimators.uoro import UORO, PreactivationUORO
from verify.fpp.kkt import lemma1_multipliers
from verify.fpp.objective import eq7_gradients, sample_indices
from verify.fpp.reproduction import fpp_learner
from verify.gpu.parity import default_runner
from verify.model.problem import Problem
from verify.oracles.bptt import (
    adjoint_gradient,
    influence_matrices,
    tbptt_gradient,
    truncated_model_gradient,
    truncated_model_states,
)
from verify.oracles.contraction import ContractionCertificate, contraction_certificate
from verify.text import safe_str

__all__ = [
    "DEFAULT",
    "FAMILIES",
    "DeviceImpl",
    "FPPImpl",
    "FamilyImpl",
    "Fixed",
    "Implementations",
    "OnlineFinalGradient",
    "RTRLImpl",
    "ReferenceImpl",
    "TruncationImpl",
    "UOROImpl",
    "build",
    "describe_part",
    "part_label",
    "reinforce_estimator",
]

#: the families of implementations under test, in report order
FAMILIES = ("reference", "rtrl", "truncation", "uoro", "fpp", "device")


# --------------------------------------------------------------------- helpers
def _is_estimator(obj: object) -> bool:
    return callable(getattr(obj, "init", None)) and callable(getattr(obj, "step", None))


@dataclass(frozen=True, eq=False)
class Fixed:
    """A factory field holding one estimator *instance*: ``Fixed(est)()`` is ``est``.

    Asked for hyperparameters (``rank=4``, ``block=4``, ``k=3``) it raises
    :class:`~verify.errors.NotApplicable`: an instance cannot change them, so the
    claims that need them are SKIPPED with that reason.
    """

    estimator: Any

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:
            given = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            raise NotApplicable(
                part_label(self.estimator),
                f"an estimator instance was given, it cannot be built with {given}; give a class or a factory "
                "function that takes these arguments",
            )
        return self.estimator


def build(factory: Callable[..., Any], what: str, *args: Any, **kwargs: Any) -> Any:
    """``factory(*args, **kwargs)``, or :class:`NotApplicable` when its signature does not take those arguments."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):  # builtins, some C callables: just try
        sig = None
    given = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
    if sig is not None:
        try:
            sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise NotApplicable(
                what, f"{part_label(factory)} does not take ({given}): {exc} -- the claim needs it"
            ) from None
    try:
        return factory(*args, **kwargs)
    except TypeError as exc:  # a factory that forwards **kwargs to something that does not take them
        if not any(f"'{k}'" in safe_str(exc) for k in kwargs):
            raise
        raise NotApplicable(
            what,
            f"{part_label(factory)} forwards ({given}) to code that does not take it: {safe_str(exc)} -- the claim "
            "needs it",
        ) from None


def part_label(obj: object) -> str:
    """A short name of a part: ``module.qualname`` of a function or class, ``partial(...)`` of a partial."""
    import functools

    if isinstance(obj, Fixed):
        return f"instance of {part_label(type(obj.estimator))}"
    if isinstance(obj, OnlineFinalGradient):
        return f"last-step estimate of {part_label(obj.factory)}"
    if isinstance(obj, functools.partial):
        kw = ", ".join(f"{k}={_short(v)}" for k, v in obj.keywords.items())
        return f"partial({part_label(obj.func)}{', ' if kw else ''}{kw})"
    mod = getattr(obj, "__module__", None)
    qual = getattr(obj, "__qualname__", None)
    if mod and qual:
        return f"{mod}.{qual}"
    return f"instance of {type(obj).__module__}.{type(obj).__qualname__}"


def _short(v: object) -> str:
    if callable(v) and hasattr(v, "__qualname__"):
        return str(v.__qualname__)
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


@dataclass(frozen=True, eq=False)
class OnlineFinalGradient:
    r"""``(problem, θ, k) -> ∂ℓ_T/∂θ`` from an online estimator factory ``factory(k)``: its estimate at t = T.

    How a user's truncated BPTT (an online estimator) is judged by the truncation
    bounds of Miller & Hardt, which speak of the gradient of the last loss
    :math:`p_T`: the estimator runs over the whole sequence with frozen θ (one
    sample) and its last estimate is the truncated gradient.
    """

    factory: Callable[..., Any]

    def __call__(self, problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
        est = build(self.factory, "truncated gradient", k)
        rng = torch.Generator().manual_seed(0)
        state = est.init(problem, theta, rng, samples=1)
        g = torch.zeros(problem.p, dtype=theta.dtype)
        for t in range(1, problem.T + 1):
            state, est_t = est.step(problem, theta, state, t, rng)
            g = est_t[0]
        return g.detach()


def _ref_model_gradient(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    return truncated_model_gradient(problem, theta, k, which="final")


def _ref_tbptt(problem: Problem, theta: torch.Tensor, k: int) -> torch.Tensor:
    return tbptt_gradient(problem, theta, k, which="final")


def reinforce_estimator(sigma: float, baseline: bool = True, inverse_sigma: bool = True) -> Any:
    """The toolkit's REINFORCE estimator on the state-perturbed RNN (Cooijmans & Martens)."""
    return Reinforce(sigma, baseline, inverse_sigma)


# ---------------------------------------------------------------- the families
class FamilyImpl:
    """Base of the families' frozen dataclasses: what a field is and how a user's object becomes one."""

    FAMILY: ClassVar[str] = ""
    PRIMARY: ClassVar[str] = ""
    #: field -> how it is called (for error messages and the docs)
    SIGNATURES: ClassVar[dict[str, str]] = {}
    #: field -> positional arity the toolkit calls it with (a user's function must accept it)
    ARITY: ClassVar[dict[str, int]] = {}
    #: fields that hold estimator factories (an estimator instance is accepted and wrapped in :class:`Fixed`)
    FACTORIES: ClassVar[tuple[str, ...]] = ()

    def with_part(self, name: str, obj: Any) -> Any:
        """This value with field ``name`` set to ``obj`` (a user's object: an instance becomes :class:`Fixed`)."""
        fields = [f.name for f in dataclasses.fields(self)]  # type: ignore[arg-type]
        if name not in fields:
            raise InvalidArgument(f"{self.FAMILY} field", name, f"one of {', '.join(fields)}")
        value = coerce_part(self.FAMILY, name, obj)
        return dataclasses.replace(self, **{name: value, **self._derived(name, value)})  # type: ignore[type-var]

    def _derived(self, name: str, value: Any) -> dict[str, Any]:
        return {}

    def parts(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}  # type: ignore[arg-type]


def coerce_part(family: str, name: str, obj: Any) -> Any:
    """A user's object as the value of ``family.name``; :class:`InvalidArgument` when it cannot be."""
    cls = _CLASSES[family]
    if name in cls.FACTORIES:
        if _is_estimator(obj) and not isinstance(obj, type):
            return Fixed(obj)
        if callable(obj):
            return obj
        raise InvalidArgument(
            f"{family}.{name}", part_label(obj), f"expected {cls.SIGNATURES[name]} (a class, a factory or an instance)"
        )
    if not callable(obj):
        raise InvalidArgument(f"{family}.{name}", part_label(obj), f"expected a function {cls.SIGNATURES[name]}")
    arity = cls.ARITY.get(name)
    if arity is not None:
        try:
            inspect.signature(obj).bind(*range(arity))
        except TypeError as exc:
            raise InvalidArgument(
                f"{family}.{name}", part_label(obj), f"expected a function {cls.SIGNATURES[name]}: {exc}"
            ) from None
        except ValueError:  # no signature to inspect: accepted, the call will tell
            pass
    return obj


@dataclass(frozen=True, eq=False)
class ReferenceImpl(FamilyImpl):
    """The exact references the ``reference.*`` claims cross-check: the adjoint recursion and the influence."""

    FAMILY: ClassVar[str] = "reference"
    PRIMARY: ClassVar[str] = "adjoint"
    SIGNATURES: ClassVar[dict[str, str]] = {
        "adjoint": "adjoint(problem, theta, per_step=False) -> dL/dtheta (p,) or, per_step, (T, p)",
        "influence": "influence(problem, theta) -> ds_t/dtheta, (T, *B, n, p)",
    }
    ARITY: ClassVar[dict[str, int]] = {"adjoint": 2, "influence": 2}

    adjoint: Callable[..., torch.Tensor] = adjoint_gradient
    influence: Callable[[Problem, torch.Tensor], torch.Tensor] = influence_matrices


@dataclass(frozen=True, eq=False)
class RTRLImpl(FamilyImpl):
    """RTRL (UORO eq. (4)) and its deterministic approximations, each checked against exact RTRL.

    ``rtrl()`` builds the online estimator the ``rtrl.*`` claims run; ``snap(order=n)`` SnAp-n (Menick et al.
    2021, arXiv:2006.07232), ``rflo()`` RFLO (Murray 2019, eLife 8:e43299), ``eprop()`` e-prop (Bellec et al.
    2020, Nat. Commun. 11:3625): each approximates RTRL's influence J_t by a deterministic recursion (no
    noise), so each is judged by where it equals exact RTRL and how far it is elsewhere -- the same
    family as the reference they are measured against, rather than a family of one field each.
    """

    FAMILY: ClassVar[str] = "rtrl"
    PRIMARY: ClassVar[str] = "rtrl"
    SIGNATURES: ClassVar[dict[str, str]] = {
        "rtrl": "rtrl() -> online estimator (init/step; influence_estimate optional)",
        "snap": "snap(order=n) -> online SnAp-n estimator (influence kept on its n-step sparsity pattern)",
        "rflo": "rflo() -> online RFLO estimator (random-feedback local trace, leaky or Elman cells)",
        "eprop": "eprop() -> online e-prop estimator (eligibility traces of each unit's own state)",
    }
    FACTORIES: ClassVar[tuple[str, ...]] = ("rtrl", "snap", "rflo", "eprop")

    rtrl: Callable[..., Any] = RTRL
    snap: Callable[..., Any] = SnAp
    rflo: Callable[..., Any] = RFLO
    eprop: Callable[..., Any] = EProp


@dataclass(frozen=True, eq=False)
class TruncationImpl(FamilyImpl):
    """Truncated BPTT and Miller & Hardt's truncated model (online estimators and the functions of the bounds)."""

    FAMILY: ClassVar[str] = "truncation"
    PRIMARY: ClassVar[str] = "tbptt"
    SIGNATURES: ClassVar[dict[str, str]] = {
        "tbptt": "tbptt(k) -> online truncated-BPTT estimator (k transitions differentiated)",
        "truncated_model": "truncated_model(k) -> online estimator of Miller & Hardt's truncated model",
        "model_states": "model_states(problem, theta, k) -> truncated-model states h^k_t, (T, n)",
        "model_gradient": "model_gradient(problem, theta, k) -> grad p^k_T, (p,)",
        "tbptt_gradient": "tbptt_gradient(problem, theta, k) -> truncated-BPTT gradient of p_T, (p,)",
        "certificate": "certificate(problem, theta) -> ContractionCertificate",
    }
    ARITY: ClassVar[dict[str, int]] = {"model_states": 3, "model_gradient": 3, "tbptt_gradient": 3, "certificate": 2}
    FACTORIES: ClassVar[tuple[str, ...]] = ("tbptt", "truncated_model")

    tbptt: Callable[..., Any] = TBPTT
    truncated_model: Callable[..., Any] = TruncatedModel
    model_states: Callable[[Problem, torch.Tensor, int], torch.Tensor] = truncated_model_states
    model_gradient: Callable[[Problem, torch.Tensor, int], torch.Tensor] = _ref_model_gradient
    tbptt_gradient: Callable[[Problem, torch.Tensor, int], torch.Tensor] = _ref_tbptt
    certificate: Callable[[Problem, torch.Tensor], ContractionCertificate] = contraction_certificate

    def _derived(self, name: str, value: Any) -> dict[str, Any]:
        if name == "tbptt":
            return {"tbptt_gradient": OnlineFinalGradient(value)}
        if name == "truncated_model":
            return {"model_gradient": OnlineFinalGradient(value)}
        return {}


@dataclass(frozen=True, eq=False)
class UOROImpl(FamilyImpl):
    """The UORO family: Algorithm 1 (``rank=``, UORO-T ``block=``), preactivation-space UORO, REINFORCE, the UORO of
    Cooijmans & Martens's framework (given Q_t or greedy rescaling), and KF-RTRL (Mujika, Meier & Steger 2018,
    arXiv:1805.10842): an unbiased rank-one sibling of UORO with a Kronecker-factored influence, and OK (Benzing et al.
    2019, arXiv:1902.03993): its sum of r Kronecker products reduced by the optimal unbiased approximation."""

    FAMILY: ClassVar[str] = "uoro"
    PRIMARY: ClassVar[str] = "uoro"
    SIGNATURES: ClassVar[dict[str, str]] = {
        "uoro": "uoro(**{rank, block}) -> online UORO estimator (noise hook optional, see verify.estimators.noise)",
        "preactivation": "preactivation(**{rank}) -> online preactivation-space UORO estimator",
        "reinforce": "reinforce(sigma, baseline=True) -> object with .sample(problem, theta, m, rng, jac)",
        "framework": "framework(alpha=None, Q0=None) -> online UORO of Cooijmans & Martens's framework with "
        "Q_t = alpha_t Q0 (None: UORO's greedy rescaling), preactivation space",
        "kfrtrl": "kfrtrl() -> online KF-RTRL estimator (Mujika et al. 2018; unbiased, noise hook optional)",
        "ok": "ok(rank=r) -> online OK estimator (Benzing et al. 2019; r Kronecker terms, unbiased)",
    }
    FACTORIES: ClassVar[tuple[str, ...]] = ("uoro", "preactivation", "reinforce", "framework", "kfrtrl", "ok")

    uoro: Callable[..., Any] = UORO
    preactivation: Callable[..., Any] = PreactivationUORO
    reinforce: Callable[..., Any] = reinforce_estimator
    framework: Callable[..., Any] = FrameworkUORO
    kfrtrl: Callable[..., Any] = KFRTRL
    ok: Callable[..., Any] = OK


@dataclass(frozen=True, eq=False)
class FPPImpl(FamilyImpl):
    """FPP (fpp-explicit-state-variables.md): eq. (7), the index sampler of §4.1, Lemma 1's multiplier target and
    the online learner (App. A, Algorithm 1) the §5 reproductions run."""

    FAMILY: ClassVar[str] = "fpp"
    PRIMARY: ClassVar[str] = "eq7_gradients"
    SIGNATURES: ClassVar[dict[str, str]] = {
        "eq7_gradients": "eq7_gradients(problem, T, lam, theta, s_start, s_end, window, target, weights) -> "
        "(grad_theta, grad_s_start, grad_s_end)",
        "sampler": "sampler(n, T, size, generator) -> indices i ~ uniform{T..n}",
        "multipliers": "multipliers(problem, theta, states) -> Lemma 1's multipliers, (n + 1, k)",
        "learner": "learner(model, cfg, inputs, targets, theta0, lrs, generator) -> online losses (R, steps) of "
        "R runs of FPP's Algorithm 1 (verify.fpp.reproduction.Learner)",
    }
    ARITY: ClassVar[dict[str, int]] = {"eq7_gradients": 9, "sampler": 4, "multipliers": 3, "learner": 7}

    eq7_gradients: Callable[..., tuple[torch.Tensor, torch.Tensor, torch.Tensor]] = eq7_gradients
    sampler: Callable[..., torch.Tensor] = sample_indices
    multipliers: Callable[[Problem, torch.Tensor, torch.Tensor], torch.Tensor] = lemma1_multipliers
    learner: Callable[..., torch.Tensor] = fpp_learner


@dataclass(frozen=True, eq=False)
class DeviceImpl(FamilyImpl):
    """How the candidate side of a device-parity comparison is computed (:data:`verify.gpu.parity.Runner`)."""

    FAMILY: ClassVar[str] = "device"
    PRIMARY: ClassVar[str] = "runner"
    SIGNATURES: ClassVar[dict[str, str]] = {"runner": "runner(algorithm, inputs) -> the candidate's rows (tensor)"}
    ARITY: ClassVar[dict[str, int]] = {"runner": 2}

    runner: Callable[..., torch.Tensor] = default_runner


_CLASSES: dict[str, type[FamilyImpl]] = {
    "reference": ReferenceImpl,
    "rtrl": RTRLImpl,
    "truncation": TruncationImpl,
    "uoro": UOROImpl,
    "fpp": FPPImpl,
    "device": DeviceImpl,
}


# ----------------------------------------------------------------- provenance
@dataclass(frozen=True)
class Source:
    """Where a user's part came from: the ``--impl`` text, the module or file, the file's SHA-256."""

    name: str  #: ``family.field``
    spec: str  #: as given (``mypkg.module:MyUORO``, ``path/to/file.py:my_rtrl``)
    module: str  #: the module it was imported from
    file: str  #: the file the module was loaded from ("" for a built-in or namespace module)
    sha256: str  #: of that file ("" without a file)

    def describe(self) -> str:
        where = f" (file {self.file}, sha256 {self.sha256})" if self.file else ""
        return f"{self.spec}{where}"

    def as_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)


@dataclass(frozen=True, eq=False)
class Implementations:
    """The implementations under test of every family (the toolkit's by default) and where user parts came from.

    ``sources`` maps ``family.field`` to the :class:`Source` of a user's part (empty for
    the defaults and for values built in code; a mutant is named by ``label``).
    """

    reference: ReferenceImpl = field(default_factory=ReferenceImpl)
    rtrl: RTRLImpl = field(default_factory=RTRLImpl)
    truncation: TruncationImpl = field(default_factory=TruncationImpl)
    uoro: UOROImpl = field(default_factory=UOROImpl)
    fpp: FPPImpl = field(default_factory=FPPImpl)
    device: DeviceImpl = field(default_factory=DeviceImpl)
    sources: tuple[Source, ...] = ()
    label: str = ""

    def family(self, name: str) -> FamilyImpl:
        if name not in FAMILIES:
            raise InvalidArgument("family", name, f"one of {', '.join(FAMILIES)}")
        value: FamilyImpl = getattr(self, name)
        return value

    def replace(self, **families: Any) -> Implementations:
        """This value with whole families replaced (``impls.replace(uoro=UOROImpl(uoro=MyUORO))``)."""
        for name, value in families.items():
            if name not in FAMILIES or not isinstance(value, _CLASSES[name]):
                want = _CLASSES[name].__name__ if name in _CLASSES else f"one of {FAMILIES}"
                raise InvalidArgument(name, part_label(value), f"expected a {want}")
        return dataclasses.replace(self, **families)

    def with_family(self, value: FamilyImpl, *, label: str = "") -> Implementations:
        """This value with ``value``'s family replaced by it (a mutant's ``impl``)."""
        changes: dict[str, Any] = {value.FAMILY: value, "label": label or self.label}
        return dataclasses.replace(self, **changes)

    def with_part(self, family: str, name: str, obj: Any, source: Source | None = None) -> Implementations:
        """This value with ``family.name`` set to a user's ``obj`` (see :meth:`FamilyImpl.with_part`)."""
        old = self.family(family)
        new = old.with_part(name, obj)
        # the part and the fields derived from it (truncation.tbptt -> tbptt_gradient) come from ``source``
        changed = [name, *(f for f in new.parts() if f != name and new.parts()[f] is not old.parts()[f])]
        sources = tuple(s for s in self.sources if s.name not in {f"{family}.{f}" for f in changed})
        if source is not None:
            sources = (*sources, *(dataclasses.replace(source, name=f"{family}.{f}") for f in changed))
        changes: dict[str, Any] = {family: new, "sources": sources}
        return dataclasses.replace(self, **changes)

    def part(self, dotted: str) -> Any:
        fam, _, name = dotted.partition(".")
        return getattr(self.family(fam), name)

    def is_default(self, dotted: str) -> bool:
        """Whether ``family.field`` is the toolkit's own implementation."""
        fam, _, name = dotted.partition(".")
        return self.part(dotted) is getattr(_CLASSES[fam](), name)

    def source(self, dotted: str) -> Source | None:
        return next((s for s in self.sources if s.name == dotted), None)

    def user_parts(self) -> tuple[str, ...]:
        """The ``family.field`` names that are not the toolkit's defaults."""
        return tuple(
            f"{fam}.{name}"
            for fam in FAMILIES
            for name in self.family(fam).parts()
            if not self.is_default(f"{fam}.{name}") or self.source(f"{fam}.{name}") is not None
        )

    def describe(self, uses: tuple[str, ...]) -> dict[str, str]:
        """``family.field`` -> what is under test there (for a claim that ``uses`` those parts)."""
        return {u: describe_part(self, u) for u in uses}


def describe_part(impls: Implementations, dotted: str) -> str:
    """``toolkit default (verify.estimators.uoro.UORO)``, the user's spec with file and SHA-256, or a mutant."""
    obj = impls.part(dotted)
    src = impls.source(dotted)
    if src is not None:  # given with --impl (even where it is the toolkit's own object)
        return f"--impl {src.describe()}"
    if impls.is_default(dotted):
        return f"toolkit default ({part_label(obj)})"
    if impls.label:
        return f"{impls.label} ({part_label(obj)})"
    return part_label(obj)


DEFAULT = Implementations()


def family_class(name: str) -> type[FamilyImpl]:
    if name not in _CLASSES:
        raise InvalidArgument("family", name, f"one of {', '.join(FAMILIES)}")
    return _CLASSES[name]


def field_names(family: str) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(family_class(family)))  # type: ignore[arg-type]


def signatures() -> Mapping[str, str]:
    """``family.field`` -> how it is called (the table of the module docstring)."""
    return {f"{fam}.{k}": v for fam in FAMILIES for k, v in _CLASSES[fam].SIGNATURES.items()}
