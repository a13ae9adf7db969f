"""An executor: joins a coordinator (``runner.py``), keeps its buckets in stores (``service/store/``) per table
(``state.py``), and answers ``Lookup`` (``servicer.py``)."""
