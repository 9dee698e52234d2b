from rtqual.cli import main

raise SystemExit(main())
