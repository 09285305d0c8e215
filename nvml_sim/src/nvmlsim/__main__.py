"""``python3 -m nvmlsim``."""
import sys

from .cli import main

sys.exit(main())
