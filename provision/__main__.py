"""Entry point: ``python -m provision`` and the ``provision`` console script."""
import sys

from provision.cli import main as _main


def main() -> None:
    sys.exit(_main(sys.argv[1:]))


if __name__ == "__main__":
    main()
