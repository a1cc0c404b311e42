import sys

from jocr.cli import main

sys.exit(main())
