"""The broker's deterministic core: partitions, replica manager, purgatory, timing wheel.

No threads, no sockets, no wall clock: time comes from an injected clock (a callable returning
milliseconds), so tests and the lockstep checks against model/ can step it directly.
"""
