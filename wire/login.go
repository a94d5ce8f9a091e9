package wire

// ClientVersionInfo is the prefix of both Register bodies.
//
//	0     4  protocol_version u32, packed (0.11.0 = 0x2C00)
//	4     1  sdk_name length 1..255, then the name
//	      1  sdk_version length 1..255, then the version
type ClientVersionInfo struct {
	Protocol   ProtocolVersion
	SDKName    string
	SDKVersion string
}

func (v *ClientVersionInfo) appendTo(e *encoder) {
	e.u32(uint32(v.Protocol))
	e.name("sdk_name", v.SDKName)
	e.name("sdk_version", v.SDKVersion)
}

func decodeVersionInfo(d *decoder) ClientVersionInfo {
	return ClientVersionInfo{
		Protocol:   ProtocolVersion(d.u32("protocol_version")),
		SDKName:    d.name("sdk_name"),
		SDKVersion: d.name("sdk_version"),
	}
}

// LoginRegister is code 40 (operation Register): version prefix, then
// [username Name][password u8-len 0..255][context u32-len]. The code itself
// is not on the wire.
type LoginRegister struct {
	Version  ClientVersionInfo
	Username string
	Password string
	Context  []byte
}

// Code implements Request.
func (*LoginRegister) Code() CommandCode { return CmdLoginRegister }

// AppendBody implements Request.
func (r *LoginRegister) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "login_register request"}
	r.Version.appendTo(&e)
	e.name("username", r.Username)
	e.shortString("password", r.Password)
	e.longBytes(r.Context)
	return e.result()
}

// DecodeBody implements Request.
func (r *LoginRegister) DecodeBody(b []byte) error {
	d := newDecoder("login_register request", b)
	r.Version = decodeVersionInfo(&d)
	r.Username = d.name("username")
	r.Password = d.shortString("password")
	r.Context = d.longBytes("context")
	return d.done()
}

// LoginRegisterWithPAT is code 45 (operation Register): version prefix, then
// [token u8-len][context u32-len].
type LoginRegisterWithPAT struct {
	Version ClientVersionInfo
	Token   string
	Context []byte
}

// Code implements Request.
func (*LoginRegisterWithPAT) Code() CommandCode { return CmdLoginRegisterWithPAT }

// AppendBody implements Request.
func (r *LoginRegisterWithPAT) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "login_register_with_pat request"}
	r.Version.appendTo(&e)
	e.shortString("token", r.Token)
	e.longBytes(r.Context)
	return e.result()
}

// DecodeBody implements Request.
func (r *LoginRegisterWithPAT) DecodeBody(b []byte) error {
	d := newDecoder("login_register_with_pat request", b)
	r.Version = decodeVersionInfo(&d)
	r.Token = d.shortString("token")
	r.Context = d.longBytes("context")
	return d.done()
}

// PasswordLogin is the tail of a password-form Register body.
type PasswordLogin struct {
	Username string
	Password string
	Context  []byte
}

// TokenLogin is the tail of a token-form Register body.
type TokenLogin struct {
	Token   string
	Context []byte
}

// Register is a Register body as the server sees it: the request does not
// say whether it is the password (40) or token (45) form, so the tail is
// decoded both ways. Password and Token are nil when that reading fails.
type Register struct {
	Version  ClientVersionInfo
	Password *PasswordLogin
	Token    *TokenLogin
}

// DecodeRegister decodes a Register body. An error means the version prefix
// itself is missing or garbled (answer Eviction 15 MalformedLogin). When both
// readings fail the server also answers MalformedLogin; when the password
// reading parses, the server tries it first and falls back to the token
// reading (see the reference §2.3).
func DecodeRegister(b []byte) (Register, error) {
	d := newDecoder("register request", b)
	r := Register{Version: decodeVersionInfo(&d)}
	if d.err != nil {
		return Register{}, d.err
	}
	tail := d.rest()
	pd := newDecoder("register password form", tail)
	p := PasswordLogin{Username: pd.name("username"), Password: pd.shortString("password"), Context: pd.longBytes("context")}
	if pd.done() == nil {
		r.Password = &p
	}
	td := newDecoder("register token form", tail)
	t := TokenLogin{Token: td.shortString("token"), Context: td.longBytes("context")}
	if td.done() == nil {
		r.Token = &t
	}
	return r, nil
}

// LoginReply is the payload of a successful Register reply (after the result
// section, which the reply carries with count 0).
//
//	0   4  user_id u32
//	4   8  session u64, > 0
//	12  4  server_protocol_version u32, packed
//	16  1  server_version length 1..255, then the version string
type LoginReply struct {
	UserID         uint32
	Session        uint64
	ServerProtocol ProtocolVersion
	ServerVersion  string
}

// AppendTo encodes the payload.
func (r *LoginReply) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "login reply"}
	if r.Session == 0 {
		return dst, fieldErr("login reply", "session", 4, "must be > 0")
	}
	e.u32(r.UserID)
	e.u64(r.Session)
	e.u32(uint32(r.ServerProtocol))
	e.name("server_version", r.ServerVersion)
	return e.result()
}

// DecodeLoginReply decodes the payload; a zero session is an error.
func DecodeLoginReply(b []byte) (LoginReply, error) {
	d := newDecoder("login reply", b)
	r := LoginReply{UserID: d.u32("user_id")}
	at := d.off
	r.Session = d.u64("session")
	if d.err == nil && r.Session == 0 {
		d.off = at
		d.fail("session", "must be > 0")
	}
	r.ServerProtocol = ProtocolVersion(d.u32("server_protocol_version"))
	r.ServerVersion = d.name("server_version")
	return r, d.done()
}

// LoginUser is the legacy code 38 body
// [username Name][password u8-len][version u32-len][context u32-len]. Servers
// answer it with Eviction 15; the codec exists so they can recognise it.
type LoginUser struct {
	Username string
	Password string
	Version  string
	Context  []byte
}

// Code implements Request.
func (*LoginUser) Code() CommandCode { return CmdLoginUser }

// AppendBody implements Request.
func (r *LoginUser) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "login_user request"}
	e.name("username", r.Username)
	e.shortString("password", r.Password)
	e.longString(r.Version)
	e.longBytes(r.Context)
	return e.result()
}

// DecodeBody implements Request.
func (r *LoginUser) DecodeBody(b []byte) error {
	d := newDecoder("login_user request", b)
	r.Username = d.name("username")
	r.Password = d.shortString("password")
	r.Version = d.longString("version")
	r.Context = d.longBytes("context")
	return d.done()
}

// LoginWithPersonalAccessToken is the legacy code 44 body [token Name];
// servers answer it with Eviction 15.
type LoginWithPersonalAccessToken struct {
	Token string
}

// Code implements Request.
func (*LoginWithPersonalAccessToken) Code() CommandCode { return CmdLoginWithPersonalAccessToken }

// AppendBody implements Request.
func (r *LoginWithPersonalAccessToken) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "login_with_pat request"}
	e.name("token", r.Token)
	return e.result()
}

// DecodeBody implements Request.
func (r *LoginWithPersonalAccessToken) DecodeBody(b []byte) error {
	d := newDecoder("login_with_pat request", b)
	r.Token = d.name("token")
	return d.done()
}

// LogoutUser is code 39 (operation Logout), empty body; the reply is empty
// and not result-framed.
type LogoutUser struct{}

// Code implements Request.
func (*LogoutUser) Code() CommandCode { return CmdLogoutUser }

// AppendBody implements Request.
func (*LogoutUser) AppendBody(dst []byte) ([]byte, error) { return dst, nil }

// DecodeBody implements Request.
func (*LogoutUser) DecodeBody(b []byte) error { return emptyBody("logout request", b) }

func emptyBody(what string, b []byte) error {
	if len(b) != 0 {
		return fieldErr(what, "body", 0, "must be empty, got %d bytes", len(b))
	}
	return nil
}
