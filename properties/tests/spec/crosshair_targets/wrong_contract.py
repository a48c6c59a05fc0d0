"""A helper whose postcondition is deliberately wrong, kept only to prove CrossHair bites.

The high watermark rule is right; the contract claims it always equals the smallest member end
offset, forgetting that the hw never moves backwards. CrossHair must find the counterexample
(hw above every member's end offset).
"""

from collections.abc import Sequence


def high_watermark_after_fetches(hw: int, member_end_offsets: Sequence[int]) -> int:
    """
    pre: hw >= 0
    pre: len(member_end_offsets) > 0
    post: __return__ == min(member_end_offsets)
    """
    return max(hw, min(member_end_offsets))
