package bundle

import (
	"bufio"
	"io"
)

func bufioReader(r io.Reader) *bufio.Reader { return bufio.NewReaderSize(r, 64<<10) }
