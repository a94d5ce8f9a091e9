package replica

import (
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/wire"
)

// Audit lines of a connection (package audit): the committed and refused
// outcome of a metadata change, and every permission denial, whichever
// check answered it (admission, a read, the data path, or the state
// machine at apply time): status and reject report code 41 here.

// denied records a permission denial of the request being served.
func (c *conn) denied(h *wire.RequestHeader, code wire.Code) {
	if code != wire.CodeUnauthorized {
		return
	}
	body := c.reqBody
	c.audit.Denied(c.n.store.View(), c.user(), h.Code, func() any {
		r, err := wire.DecodeRequestBody(h.Code, body)
		if err != nil {
			return nil
		}
		return r
	})
}

// changed records the outcome of an admitted metadata change: code 0 and
// the reply record, or the code the state machine refused it with (a
// refusal for permissions is a denial, reported by denied).
func (c *conn) changed(view *metadata.State, uid uint32, cmd metadata.Command, code wire.Code, record []byte) {
	switch code {
	case 0:
		c.audit.Changed(view, uid, cmd, record)
	case wire.CodeUnauthorized:
	default:
		c.audit.Refused(view, uid, cmd, code)
	}
}
