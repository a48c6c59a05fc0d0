"""The model explorer's bounds when an option is left out are the ones `kafkaref explore`
documents (commands/explore.py's defaults: --max-records 2, --max-epoch 2, --ticks 1, --crashes 1,
--reads 1; no flushes, elections on, acks=all produces only, no refinement check), so a caller
of model/explore_target.build that passes fewer options explores what the command would.

Found by mutation testing (session 79fa682's survivor 00326: the records bound left out read as 1
passed the model layer)."""

from kafkaref.model import events as ev
from kafkaref.model.explore_target import Limits, limits_from_options


def test_left_out_options_are_the_commands_documented_defaults():
    assert limits_from_options({}) == Limits(
        records=2, max_epoch=2, ticks=1, crashes=1, reads=1, flushes=False, elections=True,
        acks=(ev.ACKS_ALL,), refinement=False)
