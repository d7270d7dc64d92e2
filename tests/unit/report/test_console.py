"""Issue 21 cause 6: text from nodes and files reaches the terminal with its control characters made
visible (provision.report.console): the summary's tool line, `provision fabric`'s node descriptions,
`provision history` values, the progress lines, warnings and error lines."""
from __future__ import annotations

from pathlib import Path

from provision import cli
from provision.report import progress, summary
from provision.report.console import cut, visible
from provision.results.model import CheckResult, Finding, HostRecord, Outcome, Run
from provision.results.store import RunStore

OSC_TITLE = "\x1b]0;pwned\x07"  # xterm: set the window title
CLEAR = "\x1b[2J\x1b[H"  # erase the screen, cursor home
FAKE = "\x1b[32mall nodes passed\x1b[0m\rFAKE: 0 failed"  # a green line, then CR: what follows overwrites it
HOSTILE = OSC_TITLE + CLEAR + FAKE + "\x08\x9b31m\u202eevil\u2066"
DATA = Path(__file__).resolve().parents[2] / "data"


def inert(text: str) -> None:
    """No control character a terminal obeys: C0 but tab and newline, DEL, C1, bidi overrides."""
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0
           or c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"]
    assert not bad, [hex(ord(c)) for c in bad]


def test_visible_writes_each_control_as_an_escape_and_keeps_the_text():
    shown = visible(HOSTILE)
    inert(shown)
    assert shown.startswith("\\x1b]0;pwned\\x07\\x1b[2J")
    assert "all nodes passed\\x1b[0m\\rFAKE: 0 failed\\x08\\x9b31m\\u202eevil\\u2066" in shown
    assert visible("a\tb\nc") == "a\tb\nc" and visible("a\nb", newlines=False) == "a\\nb"
    assert visible(visible(HOSTILE)) == visible(HOSTILE)  # printed twice, escaped once


def test_cut_keeps_both_ends_and_says_how_much_is_left_out():
    long = "/runs/" + "a" * 100_000 + "/report.json"
    shown = cut(long, 300)
    assert len(shown) <= 300 and shown.startswith("/runs/aaa") and shown.endswith("/report.json")
    assert "[99758 characters]" in shown


def hostile_run() -> Run:
    return Run(run_id="r1", inventory="sim", phases=["burnin"], hosts={"n1": HostRecord("h100-sxm5-80g-ndr")},
               results=[CheckResult("gpu_health", ("n1",), Outcome.ERROR, "nvidia-smi exited 1: " + HOSTILE + "\nn1 ok",
                                    run_error=True)])


def test_the_summary_shows_a_tools_stderr_line_inert_and_on_one_line():
    text = summary.render(hostile_run())
    inert(text)
    line = next(x for x in text.splitlines() if "nvidia-smi exited 1" in x)
    assert "\\x1b]0;pwned\\x07" in line and "\\rFAKE: 0 failed" in line and line.endswith("\\nn1 ok")


def test_evaluate_prints_the_summary_inert(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr("provision.paths.RUNS", tmp_path)
    rundir = RunStore(tmp_path).create("r1")
    rundir.save(hostile_run())
    assert cli.main(["evaluate", str(rundir.path)]) == 1
    out = capsys.readouterr().out
    inert(out)
    assert "nvidia-smi exited 1: \\x1b]0;pwned\\x07\\x1b[2J" in out


def test_fabric_prints_node_descriptions_inert(tmp_path, capsys):
    text = (DATA / "ibnetdiscover" / "ibm_sdr_1sw_2ca.txt").read_text()
    dump = tmp_path / "hostile.txt"
    dump.write_text(text.replace('"MT43132 Mellanox Technologies"', f'"MT43132 {OSC_TITLE}{CLEAR}fake\x08\x9bok"'))
    assert cli.main(["fabric", "--ibnetdiscover", str(dump)]) == 0
    out, err = capsys.readouterr()
    inert(out + err)
    assert 'MT43132 \\x1b]0;pwned\\x07\\x1b[2J\\x1b[Hfake\\x08\\x9bok"' in out  # (a CR is a newline to open())


def test_history_prints_a_stored_text_value_inert(tmp_path, capsys):
    run = Run(run_id="r1", inventory="sim", phases=["burnin"], started="2026-12-01T10:00:00+00:00",
              hosts={"n1": HostRecord("h100-sxm5-80g-ndr")},
              results=[CheckResult("stack", ("n1",), Outcome.PASS, "ok", findings=[
                  Finding("driver", "driver_version", "550" + HOSTILE + "\nn2 stack pass", True,
                          expected="550")])])
    rundir = RunStore(tmp_path / "runs").create("r1")
    rundir.save(run)
    history = str(tmp_path / "h.db")
    assert cli.main(["history", "import", str(rundir.path), "--history", history]) == 0
    assert cli.main(["history", "--history", history, "--check", "stack", "--rows"]) == 0  # the stored rows
    out = capsys.readouterr().out
    inert(out)
    lines = out.splitlines()
    assert len(lines) == 3 and "550\\x1b]0;pwned\\x07" in lines[-1] and "\\nn2 stack pass" in lines[-1]


def test_progress_lines_and_the_live_table_are_inert():
    said: list[str] = []
    console = progress.Progress(said.append)
    console.line("install gpu01: task failed: " + HOSTILE)
    inert("".join(said))
    assert "\\x1b]0;pwned" in said[0]
    import io

    from rich.console import Console

    live = progress.Progress(said.append, live=True, console=Console(file=io.StringIO(), width=200))
    live._take(progress.ev.TaskStarted(role="nvidia_driver", task="Install " + OSC_TITLE, hosts=2))
    screen = io.StringIO()
    Console(file=screen, width=200, color_system=None).print(live._renderable())
    inert(screen.getvalue())
    assert "Install \\x1b]0;pwned" in screen.getvalue()


def test_an_error_line_is_inert_and_cut(capsys):
    assert cli.main(["parse", "nvidia-smi-qx", "/nonexistent/" + OSC_TITLE + "x" * 100_000]) == 2
    err = capsys.readouterr().err
    inert(err)
    assert len(err) < 2100 and err.count("\n") == 1 and "\\x1b]0;pwned" in err
