"""A server config's muting rule follows its mutants, however the config was made: built, or
evolved from another (attrs.evolve passes every init field on, so a rule that were one would be
copied from the old config and M9 would not take). Found by mutation testing (session 2225a17's
00209: `mutes` made an init field passed the server layer)."""

import attrs

from kafkaref.impl.server.config import ServerConfig
from kafkaref.impl.server.response_queue import mute_until_answered, never_mute


def test_the_muting_rule_is_recomputed_from_the_mutants_not_copied():
    plain = ServerConfig()
    assert plain.mutes is mute_until_answered
    mutated = attrs.evolve(plain, mutants={"M9"})
    assert mutated.mutes is never_mute
    assert attrs.evolve(mutated, mutants=()).mutes is mute_until_answered
