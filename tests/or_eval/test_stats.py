import pytest
from hypothesis import given, strategies as st

from trex.training.or_eval.stats import mcnemar, mcnemar_exact_p, wilson_interval


def test_wilson_textbook_values():
    # Newcombe (1998) / Agresti-Coull worked values at 95%
    w = wilson_interval(8, 10)
    assert (round(w.low, 4), round(w.high, 4)) == (0.4902, 0.9433)
    z = wilson_interval(0, 10)
    assert z.low == 0.0 and round(z.high, 4) == 0.2775
    full = wilson_interval(10, 10)
    assert full.high == 1.0 and round(full.low, 4) == 0.7225
    assert wilson_interval(0, 0).rate is None


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_wilson_contains_rate_and_nests(kn, conf):
    k, n = kn
    w = wilson_interval(k, n, conf)
    if n == 0:
        return
    assert 0.0 <= w.low <= w.rate <= w.high <= 1.0
    wider = wilson_interval(k, n, min(0.999, conf + 0.009))
    assert wider.low <= w.low + 1e-12 and wider.high >= w.high - 1e-12


def test_wilson_rejects_bad_counts():
    with pytest.raises(ValueError, match="successes"):
        wilson_interval(5, 3)


def test_mcnemar_exact_small_cases():
    assert mcnemar_exact_p(1, 5) == pytest.approx(2 * (1 + 6) / 64)
    assert mcnemar_exact_p(0, 0) == 1.0 and mcnemar_exact_p(3, 3) == 1.0
    assert mcnemar_exact_p(0, 10) == pytest.approx(2 / 1024)
    # the tail is summed in exact rationals: no overflow of comb() terms at large counts
    assert mcnemar_exact_p(0, 60) == 2.0 ** -59
    assert 0.0 <= mcnemar_exact_p(900, 1100) < 1e-5
    assert mcnemar_exact_p(480, 520) == pytest.approx(mcnemar_exact_p(520, 480))


@given(st.integers(0, 60), st.integers(0, 60))
def test_mcnemar_matches_scipy_binomtest(b, c):
    scipy_stats = pytest.importorskip("scipy.stats")
    if b + c == 0:
        return
    ref = scipy_stats.binomtest(min(b, c), b + c, 0.5).pvalue
    assert mcnemar_exact_p(b, c) == pytest.approx(min(1.0, ref), rel=1e-9, abs=1e-15)


def test_mcnemar_counts_pairs():
    a = [True, True, False, False, True, False]
    b = [True, False, True, False, False, False]
    r = mcnemar(a, b)
    assert (r.n, r.both_correct, r.only_a, r.only_b, r.neither) == (6, 1, 2, 1, 2)
    assert r.p_value == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same items"):
        mcnemar([True], [True, False])
