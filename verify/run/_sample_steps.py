"""Sample-steps each claim draws from each online-estimator part (generated: ``python -m verify.bench.sample_steps
--write``).

``SAMPLE_STEPS[profile][claim][part]``: the samples summed over every ``step`` of the estimators the part's factory
built while the claim ran at seed 0 with that part a user's (a counting copy of the toolkit's own). ``--plan``
scales them by a user's piloted cost per sample-step (:func:`verify.run.plan.speed_ratio`).
"""

# fmt: off
SAMPLE_STEPS: dict[str, dict[str, dict[str, int]]] = {'ci': {'rtrl.bias-alignment': {'rtrl.eprop': 216,
                                'rtrl.rflo': 216,
                                'rtrl.rtrl': 216,
                                'rtrl.snap': 432,
                                'uoro.kfrtrl': 43200,
                                'uoro.uoro': 43200},
        'rtrl.eprop-limits': {'rtrl.eprop': 74},
        'rtrl.exact': {'rtrl.rtrl': 204},
        'rtrl.influence-balancing': {'rtrl.rtrl': 380, 'truncation.tbptt': 12},
        'rtrl.online-convergence': {'rtrl.rtrl': 1000},
        'rtrl.rflo-limits': {'rtrl.rflo': 98},
        'rtrl.snap-exactness': {'rtrl.snap': 98},
        'rtrl.truncated-bptt': {'truncation.tbptt': 231},
        'uoro.algorithm-1-conformance': {'uoro.uoro': 219},
        'uoro.exact-expectation': {'uoro.preactivation': 3460, 'uoro.uoro': 31892},
        'uoro.influence-balancing-learning': {'truncation.tbptt': 400, 'uoro.uoro': 312},
        'uoro.kfrtrl-unbiased': {'uoro.kfrtrl': 963584},
        'uoro.kfrtrl-variance': {'uoro.kfrtrl': 48000},
        'uoro.mutants-caught': {'uoro.uoro': 87030},
        'uoro.ok-unbiased': {'uoro.ok': 35},
        'uoro.ok-variance': {'uoro.kfrtrl': 96000, 'uoro.ok': 288017},
        'uoro.preactivation': {'uoro.preactivation': 1342464},
        'uoro.rank-unbiased': {'uoro.uoro': 960512},
        'uoro.rank-variance': {'uoro.uoro': 22500},
        'uoro.truncated-unbiased': {'uoro.uoro': 1871840},
        'uoro.unbiased-statistical': {'uoro.uoro': 12058627},
        'uoro.variance-growth': {'uoro.uoro': 49612},
        'uoro.variance-matches-algorithm-1': {'uoro.uoro': 15010},
        'uoro.variance-reduction-optimal': {'uoro.uoro': 96000}}}
