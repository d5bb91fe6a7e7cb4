from jsonl_engine.cli import main

raise SystemExit(main())
