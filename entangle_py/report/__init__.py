"""Reporting a check: terminal text (``text``), the versioned JSON report (``jsonout``), and what is
written from the JSON alone -- ``entangle explain`` (``explain``), ``--html`` (``html``) and
``--sarif`` (``sarif``).  Import the module you need: only ``text`` loads torch (for the numeric
re-check's printer), so ``entangle explain`` starts fast."""
