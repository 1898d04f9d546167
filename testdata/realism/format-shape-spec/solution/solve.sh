#!/bin/bash
cat > /app/features.py <<'EOF'
EOF
