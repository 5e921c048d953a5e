"""``python -m benchsel_lib.data fetch|verify``: make every data file of the manifest available and verified."""
from .sources import main

raise SystemExit(main())
