package wire

// User status codes.
const (
	UserActive   uint8 = 1
	UserInactive uint8 = 2
)

// GetUser is code 31: [user_id Id]. Reply: UserDetails, or an empty body
// when the user does not exist.
type GetUser struct{ UserID Identifier }

// Code implements Request.
func (*GetUser) Code() CommandCode { return CmdGetUser }

// AppendBody implements Request.
func (r *GetUser) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("get_user request", dst, []string{"user_id"}, r.UserID)
}

// DecodeBody implements Request.
func (r *GetUser) DecodeBody(b []byte) error {
	d := newDecoder("get_user request", b)
	r.UserID = d.identifier("user_id")
	return d.done()
}

// GetUsers is code 32, empty body. Reply: Users.
type GetUsers struct{}

// Code implements Request.
func (*GetUsers) Code() CommandCode { return CmdGetUsers }

// AppendBody implements Request.
func (*GetUsers) AppendBody(dst []byte) ([]byte, error) { return dst, nil }

// DecodeBody implements Request.
func (*GetUsers) DecodeBody(b []byte) error { return emptyBody("get_users request", b) }

// CreateUser is code 33 (operation 141):
// [username Name][password u8-len][status u8][has_permissions u8]
// ([perm_len u32][permissions] if 1)[options to end].
// Reply (result-framed): UserDetails of the new user. The status byte is
// passed through (1 active, 2 inactive); the server validates it.
type CreateUser struct {
	Username    string
	Password    string
	Status      uint8
	Permissions *Permissions
	Options     Options
}

// Code implements Request.
func (*CreateUser) Code() CommandCode { return CmdCreateUser }

// AppendBody implements Request.
func (r *CreateUser) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "create_user request"}
	e.name("username", r.Username)
	e.shortString("password", r.Password)
	e.u8(r.Status)
	e.b = appendWrappedPermissions(e.b, r.Permissions)
	e.options(r.Options)
	return e.result()
}

// DecodeBody implements Request.
func (r *CreateUser) DecodeBody(b []byte) error {
	d := newDecoder("create_user request", b)
	r.Username = d.name("username")
	r.Password = d.shortString("password")
	r.Status = d.u8("status")
	r.Permissions = decodeWrappedPermissions(&d)
	r.Options = d.optionsToEnd()
	return d.done()
}

// DeleteUser is code 34 (operation 143): [user_id Id].
type DeleteUser struct{ UserID Identifier }

// Code implements Request.
func (*DeleteUser) Code() CommandCode { return CmdDeleteUser }

// AppendBody implements Request.
func (r *DeleteUser) AppendBody(dst []byte) ([]byte, error) {
	return appendIDs("delete_user request", dst, []string{"user_id"}, r.UserID)
}

// DecodeBody implements Request.
func (r *DeleteUser) DecodeBody(b []byte) error {
	d := newDecoder("delete_user request", b)
	r.UserID = d.identifier("user_id")
	return d.done()
}

// UpdateUser is code 35 (operation 142):
// [user_id Id][has_username u8]([username Name])[has_status u8]([status u8])[options to end].
type UpdateUser struct {
	UserID   Identifier
	Username *string
	Status   *uint8
	Options  Options
}

// Code implements Request.
func (*UpdateUser) Code() CommandCode { return CmdUpdateUser }

// AppendBody implements Request.
func (r *UpdateUser) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "update_user request"}
	e.identifier("user_id", r.UserID)
	if r.Username != nil {
		e.u8(1)
		e.name("username", *r.Username)
	} else {
		e.u8(0)
	}
	if r.Status != nil {
		e.u8(1)
		e.u8(*r.Status)
	} else {
		e.u8(0)
	}
	e.options(r.Options)
	return e.result()
}

// DecodeBody implements Request.
func (r *UpdateUser) DecodeBody(b []byte) error {
	d := newDecoder("update_user request", b)
	r.UserID = d.identifier("user_id")
	r.Username, r.Status = nil, nil
	if d.flag("has_username") {
		name := d.name("username")
		r.Username = &name
	}
	if d.flag("has_status") {
		s := d.u8("status")
		r.Status = &s
	}
	r.Options = d.optionsToEnd()
	return d.done()
}

// flag reads a presence byte that must be 0 or 1.
func (d *decoder) flag(field string) bool {
	v := d.u8(field)
	if d.err == nil && v > 1 {
		d.off--
		d.fail(field, "flag must be 0 or 1, got %d", v)
	}
	return v == 1 && d.err == nil
}

// UpdatePermissions is code 36 (operation 145):
// [user_id Id][has_permissions u8]([perm_len u32][permissions] if 1).
type UpdatePermissions struct {
	UserID      Identifier
	Permissions *Permissions
}

// Code implements Request.
func (*UpdatePermissions) Code() CommandCode { return CmdUpdatePermissions }

// AppendBody implements Request.
func (r *UpdatePermissions) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "update_permissions request"}
	e.identifier("user_id", r.UserID)
	if e.err == nil {
		e.b = appendWrappedPermissions(e.b, r.Permissions)
	}
	return e.result()
}

// DecodeBody implements Request.
func (r *UpdatePermissions) DecodeBody(b []byte) error {
	d := newDecoder("update_permissions request", b)
	r.UserID = d.identifier("user_id")
	r.Permissions = decodeWrappedPermissions(&d)
	return d.done()
}

// ChangePassword is code 37 (operation 144):
// [user_id Id][current u8-len][new u8-len].
type ChangePassword struct {
	UserID          Identifier
	CurrentPassword string
	NewPassword     string
}

// Code implements Request.
func (*ChangePassword) Code() CommandCode { return CmdChangePassword }

// AppendBody implements Request.
func (r *ChangePassword) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "change_password request"}
	e.identifier("user_id", r.UserID)
	e.shortString("current_password", r.CurrentPassword)
	e.shortString("new_password", r.NewPassword)
	return e.result()
}

// DecodeBody implements Request.
func (r *ChangePassword) DecodeBody(b []byte) error {
	d := newDecoder("change_password request", b)
	r.UserID = d.identifier("user_id")
	r.CurrentPassword = d.shortString("current_password")
	r.NewPassword = d.shortString("new_password")
	return d.done()
}

// UserInfo is the user record:
// [id u32][created_at u64 µs][status u8: 1 active, 2 inactive][username Name][options: u32 length + TLV].
type UserInfo struct {
	ID        uint32
	CreatedAt uint64
	Status    uint8
	Username  string
	Options   Options
}

func (u *UserInfo) appendTo(e *encoder) {
	if e.err == nil && u.Status != UserActive && u.Status != UserInactive {
		e.err = fieldErr(e.what, "status", -1, "must be 1 or 2, got %d", u.Status)
		return
	}
	e.u32(u.ID)
	e.u64(u.CreatedAt)
	e.u8(u.Status)
	e.name("username", u.Username)
	e.prefixedOptions("options", u.Options)
}

func decodeUserInfo(d *decoder) UserInfo {
	u := UserInfo{ID: d.u32("id"), CreatedAt: d.u64("created_at")}
	u.Status = d.u8("status")
	if d.err == nil && u.Status != UserActive && u.Status != UserInactive {
		d.off--
		d.fail("status", "must be 1 (active) or 2 (inactive), got %d", u.Status)
		return UserInfo{}
	}
	u.Username = d.name("username")
	u.Options = d.prefixedOptions("options")
	return u
}

// Users is the GET_USERS reply: records back to back.
type Users []UserInfo

// AppendTo encodes the list.
func (l Users) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "users"}
	for i := range l {
		l[i].appendTo(&e)
	}
	return e.result()
}

// DecodeUsers decodes the list.
func DecodeUsers(b []byte) (Users, error) {
	d := newDecoder("users", b)
	var out Users
	for d.err == nil && d.remaining() > 0 {
		u := decodeUserInfo(&d)
		if d.err == nil {
			out = append(out, u)
		}
	}
	return out, d.done()
}

// UserDetails is the GET_USER / CREATE_USER payload: the user record, then
// either four zero bytes (no permissions) or [1][perm_len u32][permissions].
type UserDetails struct {
	UserInfo
	Permissions *Permissions
}

// AppendTo encodes the payload.
func (u *UserDetails) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "user details"}
	u.UserInfo.appendTo(&e)
	if e.err != nil {
		return dst, e.err
	}
	if u.Permissions == nil {
		return appendU32(e.b, 0), nil
	}
	return appendWrappedPermissions(e.b, u.Permissions), nil
}

// DecodeUserDetails decodes a non-empty payload.
func DecodeUserDetails(b []byte) (UserDetails, error) {
	d := newDecoder("user details", b)
	u := UserDetails{UserInfo: decodeUserInfo(&d)}
	flag := d.u8("has_permissions")
	switch {
	case d.err != nil:
	case flag == 0:
		pad := d.raw("permissions padding", 3)
		if d.err == nil && (pad[0]|pad[1]|pad[2]) != 0 {
			d.off -= 3
			d.fail("permissions padding", "no-permissions marker must be four zero bytes")
		}
	case flag == 1:
		d.off--
		u.Permissions = decodeWrappedPermissions(&d)
	default:
		d.off--
		d.fail("has_permissions", "flag must be 0 or 1, got %d", flag)
	}
	return u, d.done()
}

// GetPersonalAccessTokens is code 41, empty body. Reply: PersonalAccessTokens.
type GetPersonalAccessTokens struct{}

// Code implements Request.
func (*GetPersonalAccessTokens) Code() CommandCode { return CmdGetPersonalAccessTokens }

// AppendBody implements Request.
func (*GetPersonalAccessTokens) AppendBody(dst []byte) ([]byte, error) { return dst, nil }

// DecodeBody implements Request.
func (*GetPersonalAccessTokens) DecodeBody(b []byte) error {
	return emptyBody("get_personal_access_tokens request", b)
}

// CreatePersonalAccessToken is code 42 (operation 146): [name Name][expiry u64].
// Expiry is a duration in µs: 0 = server default, MaxUint64 = never. (Iggy's
// Go SDK writes its u32 expiry into the upper half of the u64.) Reply
// (result-framed): RawPersonalAccessToken.
type CreatePersonalAccessToken struct {
	Name   string
	Expiry uint64
}

// Code implements Request.
func (*CreatePersonalAccessToken) Code() CommandCode { return CmdCreatePersonalAccessToken }

// AppendBody implements Request.
func (r *CreatePersonalAccessToken) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "create_personal_access_token request"}
	e.name("name", r.Name)
	e.u64(r.Expiry)
	return e.result()
}

// DecodeBody implements Request.
func (r *CreatePersonalAccessToken) DecodeBody(b []byte) error {
	d := newDecoder("create_personal_access_token request", b)
	r.Name = d.name("name")
	r.Expiry = d.u64("expiry")
	return d.done()
}

// DeletePersonalAccessToken is code 43 (operation 147): [name Name].
type DeletePersonalAccessToken struct{ Name string }

// Code implements Request.
func (*DeletePersonalAccessToken) Code() CommandCode { return CmdDeletePersonalAccessToken }

// AppendBody implements Request.
func (r *DeletePersonalAccessToken) AppendBody(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "delete_personal_access_token request"}
	e.name("name", r.Name)
	return e.result()
}

// DecodeBody implements Request.
func (r *DeletePersonalAccessToken) DecodeBody(b []byte) error {
	d := newDecoder("delete_personal_access_token request", b)
	r.Name = d.name("name")
	return d.done()
}

// PersonalAccessTokenInfo is one [name Name][expiry_at u64 µs timestamp, 0 = never].
type PersonalAccessTokenInfo struct {
	Name     string
	ExpiryAt uint64
}

// PersonalAccessTokens is the GET_PERSONAL_ACCESS_TOKENS reply: entries back
// to back, no count.
type PersonalAccessTokens []PersonalAccessTokenInfo

// AppendTo encodes the list.
func (l PersonalAccessTokens) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "personal access tokens"}
	for _, t := range l {
		e.name("name", t.Name)
		e.u64(t.ExpiryAt)
	}
	return e.result()
}

// DecodePersonalAccessTokens decodes the list.
func DecodePersonalAccessTokens(b []byte) (PersonalAccessTokens, error) {
	d := newDecoder("personal access tokens", b)
	var out PersonalAccessTokens
	for d.err == nil && d.remaining() > 0 {
		t := PersonalAccessTokenInfo{Name: d.name("name"), ExpiryAt: d.u64("expiry_at")}
		if d.err == nil {
			out = append(out, t)
		}
	}
	return out, d.done()
}

// RawPersonalAccessToken is the CREATE_PERSONAL_ACCESS_TOKEN payload:
// [token Name] (the server keeps only a hash).
type RawPersonalAccessToken struct{ Token string }

// AppendTo encodes the payload.
func (t *RawPersonalAccessToken) AppendTo(dst []byte) ([]byte, error) {
	e := encoder{b: dst, what: "personal access token"}
	e.name("token", t.Token)
	return e.result()
}

// DecodeRawPersonalAccessToken decodes the payload.
func DecodeRawPersonalAccessToken(b []byte) (RawPersonalAccessToken, error) {
	d := newDecoder("personal access token", b)
	t := RawPersonalAccessToken{Token: d.name("token")}
	return t, d.done()
}
