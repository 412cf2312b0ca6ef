from cwread.cli import main

raise SystemExit(main())
