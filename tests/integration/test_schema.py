"""Every sluice line the integration tests of this run read (world.SEEN:
every `sluice run --events` file of test_audit, test_daemon, test_events,
test_kernel, test_limits, test_proxy, test_resolver, ...), checked against
docs/events.md: each field documented with its ECS type, the required
fields present (test_events.check_lines).  Runs after the others (file
order); alone it has nothing to check and says so (skipped)."""
import world as W
import test_events as TE


def test_every_line_of_the_run_matches_the_documented_schema(w):
    if len(W.SEEN) < 50:
        raise W.Skip("only %d lines read so far: run it after the other integration tests" % len(W.SEEN))
    kinds = TE.check_lines(W.SEEN)
    assert {"sluice.kernel", "sluice.lifecycle"} <= kinds, kinds
