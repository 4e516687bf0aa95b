#!/usr/bin/env bash
set -u
R=$OUT/r; mkdir -p $R
CAKE_SANITIZE_TABLES=default CAKE_SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" tools/device-session.sh .stage $R 540
cd $OUT && tar czf r.tgz r && rm -rf r
