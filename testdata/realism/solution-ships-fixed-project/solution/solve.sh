#!/bin/bash
cp -r /solution/engine/. /app/engine/
