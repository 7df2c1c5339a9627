"""`python main.py [PATH...]` - start the ptprof-gui desktop app from a checkout."""
import sys

if __name__ == "__main__":
    from gui.app import main

    sys.exit(main())
