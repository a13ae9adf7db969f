"""Tables written by Paimon Java (``javafix.py``, ``src/PaimonFixtures.java``) for the tests of every package
that reads them; its fixtures are registered by the root conftest."""
