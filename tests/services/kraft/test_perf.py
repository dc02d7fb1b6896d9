from services.kraft.bench import measure, synthetic_log


def test_decode_rate_on_synthetic_log(tmp_path, capsys):
    path = tmp_path / "00000000000000000000.log"
    n = synthetic_log(path, 50_000)
    count, rate = measure(path, repeat=2)
    assert count == n
    with capsys.disabled():
        print(f"\nkraft decode: {rate:,.0f} records/s ({count} synthetic records)")
    # a floor well under what a slow CI machine does; the number above is what to watch
    assert rate > 30_000
