"""The golden test's comparison (golden_numbers.compare): floats within a relative 1e-9, counts and
text exactly, numbers in rendered text within tolerance but the text around them exact."""
import golden_numbers  # noqa: E402 (tests/ is on the path: conftest)


def diffs(a, b):
    return golden_numbers.compare("x", a, b, [])


def test_a_float_within_1e_13_relative_matches_and_one_off_by_1e_6_does_not():
    v = 102.49688549868398
    assert diffs({"a": [v]}, {"a": [v * (1 + 1e-13)]}) == []
    assert diffs({"a": [v]}, {"a": [102.49688549868334]}) == []  # the EPYC AVX-512 value of issue 42
    d = diffs({"a": [v]}, {"a": [v * (1 + 1e-6)]})
    assert len(d) == 1 and d[0].startswith("x.a[0]: expected 102.49688549868398")
    assert diffs(5e-07, 5e-07 * (1 - 1e-6)) != []  # the smallest golden float is still judged


def test_counts_are_exact_and_an_int_must_stay_an_int():
    assert diffs({"n": 7}, {"n": 7}) == []
    assert diffs({"n": 7}, {"n": 8}) != []
    assert diffs({"n": 7}, {"n": 7.0}) != []
    assert diffs({"n": 7.0}, {"n": 7}) != []
    assert diffs([True], [1]) != []
    assert diffs({"n": 1}, {"n": 1, "m": 2}) != [] and diffs([1, 2], [1]) != []


def test_rendered_text_is_exact_but_for_floats_rendered_within_tolerance():
    text = "| host-load | 2 | 4.12 M (0 … 12.1 M) | 8.0000 | -47.8% | 1,430 | lock tas; 6.1.0-test |\n"
    assert diffs(text, text) == []
    assert diffs(text, text.replace("8.0000", "8.0001")) == []  # one unit of the last digit: rounding
    assert diffs(text, text.replace("8.0000", "8.0002")) != []
    assert diffs(text, text.replace("-47.8%", "-47.9%")) == []
    assert diffs(text, text.replace("-47.8%", "-48.0%")) != []
    assert diffs(text, text.replace("| 2 |", "| 3 |")) != []  # a count
    assert diffs(text, text.replace("1,430", "1,431")) != []
    assert diffs(text, text.replace("6.1.0", "6.1.1")) != []  # a version is text
    assert diffs(text, text.replace("tas", "mcs")) != []
    assert diffs(text, text.replace("4.12 M", "4.12 k")) != []
    assert diffs("w 1.2500000001e+06", "w 1.2500000002e+06") == []
    assert diffs("w 1.25e+06", "w 1.27e+06") != []
    d = diffs("a\nb 0.500\n", "a\nb 0.600\n")
    assert d == ["x line 2: float '0.500' became '0.600'"]
