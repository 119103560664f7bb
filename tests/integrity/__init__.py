"""The integrity matrix: sample projects with real bugs (``projects/``), honest and cheating makers
(``makers.py``) and the helpers that set them up (``harness.py``). The matrix itself is
tests/test_integrity_matrix.py."""
