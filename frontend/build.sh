#!/usr/bin/env bash
# Rebuild the web pages' assets (cartotheca/web/static) from the pinned npm packages.
# The output is committed; tests/web/test_assets.py checks it matches manifest.json.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npm run build
