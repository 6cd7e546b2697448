import json

import pytest

from focused.bench.curves import gap_closure, main, mean_harvests


def run(track, strategy, losses, group="g", topic="t"):
    return {"track": track, "strategy": strategy, "group": group, "topic": topic, "cumulative_loss": losses}


def test_harvest_every_step_merged_from_two_runs(tmp_path, capsys):
    # 100 pages: the prior loses every other page, the variant one in four; an earlier run's variant is ignored
    prior = [sum(1 for j in range(i + 1) if j % 2) for i in range(100)]
    variant = [sum(1 for j in range(i + 1) if j % 4 == 3) for i in range(100)]
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({"runs": [run("wiki", "apprentice:x", variant)]}))
    second.write_text(
        json.dumps(
            {
                "runs": [
                    run("wiki", "apprentice:prior", prior),
                    run("wiki", "apprentice:x", prior),  # the later file's copy of a strategy is not taken
                    run("wiki", "baseline", prior),
                    run("wiki", "oracle", [0] * 100),
                    run("wiki", "oracle-lookahead", [0] * 100),
                ]
            }
        )
    )
    table = mean_harvests([first, second], [50, 100, 250])
    assert table[("wiki", "apprentice:x")][100] == [75.0]
    assert table[("wiki", "apprentice:prior")][50] == [50.0]
    assert 250 not in table[("wiki", "apprentice:prior")]  # the run fetched fewer pages
    assert gap_closure(second, "wiki", 100) == (50.0, 100.0)
    assert main([f"{first},{second}", "--steps", "50,100"]) == 0
    out = capsys.readouterr().out
    assert "apprentice:x" in out and "+25.0" in out


def test_bad_input_is_one_line_and_status_1(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(tmp_path / "missing.json")])
    assert exc.value.code == 1 and "no such bench.json" in capsys.readouterr().err
    good = tmp_path / "ok.json"
    good.write_text(json.dumps({"runs": []}))
    with pytest.raises(SystemExit) as exc:
        main([str(good), "--steps", "0,x"])
    assert exc.value.code == 1 and "--steps" in capsys.readouterr().err
