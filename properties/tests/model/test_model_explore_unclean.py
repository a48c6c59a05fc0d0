"""`kafkaref explore --target model --unclean` tries unclean elections, and they take effect:
two replicas, min.insync.replicas 1, a record, a tick and a crash reach a partition whose last
ISR member is down while the other replica is up, where the explorer's unclean Elect of that
replica succeeds (the ghost history marks the partition unclean), and every invariant still
holds everywhere. Found by mutation testing (pick --folder model --seed 28: the unclean Elect
naming partition 1, which the explored cluster does not have, passed the model layer: every
such election was refused and the exploration quietly lost them)."""

from kafkaref.model.explore_target import build
from kafkaref.spec.explore import explore


def test_the_explorer_reaches_unclean_elections_when_they_are_allowed():
    starts, successors, invariants, _ = build(dict(
        replicas=2, min_insync_replicas=1, max_records=1, max_epoch=2, ticks=1, crashes=1, reads=0,
        unclean=True))
    unclean = []

    def watched(node):
        for label, successor in successors(node):
            if successor.ghost.unclean and not node.ghost.unclean:
                unclean.append(label)
            yield label, successor

    result = explore(starts, watched, invariants)
    assert result.complete and result.violation is None
    assert unclean and all(label.endswith("unclean=True)") for label in unclean)
