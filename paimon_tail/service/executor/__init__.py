"""An executor: joins a coordinator (``runner.py``), keeps local copies of its buckets' files (``mirror.py``),
merged and indexed into bucket stores (``store.py``) per table (``state.py``), and answers ``Lookup``
(``servicer.py``)."""
