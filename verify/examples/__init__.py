"""Worked examples: implementations written against the public API only, as a user would write them.

Each module holds one online estimator (``init``/``step`` over explicit state, with a
leading sample dimension M; :mod:`verify.estimators.base`) and one variant with a
seeded bug. Run the catalog against them with::

    rnn-verify run --impl rtrl=verify.examples.rtrl:MyRTRL --impl-only
    rnn-verify run --impl tbptt=verify.examples.tbptt:MyTBPTT --impl-only
    rnn-verify run --impl uoro=verify.examples.uoro:MyUORO --impl-only

(``--impl-only`` runs only the claims that exercise the given implementation). The
correct ones PASS their family's claims; the ``...Buggy`` ones FAIL, and the
message names the claim and the quantity. tests/test_examples_impl.py runs them.
"""
