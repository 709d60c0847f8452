"""The command line's logging: bare progress on stdout, problems on stderr with their level."""
import logging

from common import logs


def test_warnings_are_prefixed_by_the_formatter_and_progress_is_bare(capsys):
    logs.setup()
    log = logging.getLogger("experiments.some_module")
    log.info("point 1/2 done")
    log.warning("%s is corrupt; it is ignored and recomputed", "metrics.json")
    log.error("it broke")
    out, err = capsys.readouterr()
    assert out == "point 1/2 done\n"
    assert err == ("warning: metrics.json is corrupt; it is ignored and recomputed\n"
                   "error: it broke\n")
