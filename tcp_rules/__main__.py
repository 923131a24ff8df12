import sys

from tcp_rules.cli import main

sys.exit(main())
