"""The sample projects under projects/ hold tests that fail on purpose: they are data for the
integrity matrix, never part of this repository's own suite."""

collect_ignore = ["projects"]
