package load

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
)

// Kind classifies the outcome of one request.
type Kind int

// Outcome kinds. KindOK is a verified answer; every other kind is an error.
const (
	KindOK      Kind = iota
	KindRefused      // connection refused
	KindReset        // connection reset or closed by the server mid-request
	KindTimeout      // no answer before the request timeout
	Kind4xx          // a 4xx status, a batch "error:" line or "NoSolution"
	KindBusy         // 503, or a batch "ServerTooBusy" line
	Kind5xx          // any other 5xx
	KindWrong        // an answer that does not solve its puzzle
	KindOther        // anything else (malformed response, unexpected status)
	numKinds
)

var kindNames = [numKinds]string{"ok", "refused", "reset", "timeout", "4xx", "503_busy", "5xx", "wrong", "other"}

func (k Kind) String() string {
	if k < 0 || k >= numKinds {
		return "unknown"
	}
	return kindNames[k]
}

// errorKinds lists the error kinds in report order.
func errorKinds() []Kind {
	return []Kind{KindRefused, KindReset, KindTimeout, Kind4xx, KindBusy, Kind5xx, KindWrong, KindOther}
}

// kindOfStatus maps an HTTP status other than 200 to a kind.
func kindOfStatus(code int) Kind {
	switch {
	case code == 503:
		return KindBusy
	case code >= 400 && code < 500:
		return Kind4xx
	case code >= 500 && code < 600:
		return Kind5xx
	}
	return KindOther
}

// kindOfError classifies a transport error.
func kindOfError(err error) Kind {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return KindRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return KindReset
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return KindTimeout
	}
	return KindOther
}
