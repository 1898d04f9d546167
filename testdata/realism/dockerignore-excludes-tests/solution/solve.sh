#!/bin/bash
python3 - <<'EOF'
print('patched')
EOF
