package fake

import (
	"fmt"
	"net/http"
	"net/url"
	"sort"
)

// iamVersion is the Version parameter IAM's Query requests carry (EC2's is 2016-11-15).
const iamVersion = "2010-05-08"

// InstanceProfile is an IAM instance profile.
type InstanceProfile struct {
	Name  string
	Roles []string
	Tags  map[string]string
}

// AddRole makes a role exist (AddRoleToInstanceProfile fails for unknown roles).
func (s *Server) AddRole(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.roles[name] = true
}

// InstanceProfiles returns copies of the instance profiles.
func (s *Server) InstanceProfiles() []InstanceProfile {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []InstanceProfile
	for _, p := range s.profiles {
		cp := *p
		cp.Roles = append([]string(nil), p.Roles...)
		out = append(out, cp)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func writeIAMError(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>fake</RequestId></ErrorResponse>`, esc(code), esc(msg))
}

func (s *Server) serveIAM(w http.ResponseWriter, action string, p url.Values) {
	name := p.Get("InstanceProfileName")
	profile := s.profiles[name]
	switch action {
	case "GetInstanceProfile", "AddRoleToInstanceProfile", "RemoveRoleFromInstanceProfile", "DeleteInstanceProfile":
		if profile == nil {
			writeIAMError(w, http.StatusNotFound, "NoSuchEntity", "Instance Profile "+name+" cannot be found.")
			return
		}
	}
	switch action {
	case "GetInstanceProfile":
	case "CreateInstanceProfile":
		if profile != nil {
			writeIAMError(w, http.StatusConflict, "EntityAlreadyExists", "Instance Profile "+name+" already exists.")
			return
		}
		profile = &InstanceProfile{Name: name, Tags: map[string]string{}}
		for _, i := range indices(p, "Tags.member") {
			t := item(p, "Tags.member", i)
			profile.Tags[t.Get("Key")] = t.Get("Value")
		}
		s.profiles[name] = profile
	case "AddRoleToInstanceProfile":
		role := p.Get("RoleName")
		if !s.roles[role] {
			writeIAMError(w, http.StatusNotFound, "NoSuchEntity", "The role with name "+role+" cannot be found.")
			return
		}
		if len(profile.Roles) > 0 {
			writeIAMError(w, http.StatusConflict, "LimitExceeded", "Cannot exceed quota for InstanceSessionsPerInstanceProfile: 1")
			return
		}
		profile.Roles = []string{role}
	case "RemoveRoleFromInstanceProfile":
		profile.Roles = nil
	case "DeleteInstanceProfile":
		if len(profile.Roles) > 0 {
			writeIAMError(w, http.StatusConflict, "DeleteConflict", "Cannot delete entity, must remove roles from instance profile first.")
			return
		}
		delete(s.profiles, name)
	default:
		writeIAMError(w, http.StatusBadRequest, "InvalidAction", "the fake does not implement iam "+action)
		return
	}
	x := &xb{}
	x.WriteString(`<` + action + `Response xmlns="https://iam.amazonaws.com/doc/2010-05-08/">`)
	if action == "GetInstanceProfile" || action == "CreateInstanceProfile" {
		x.open(action + "Result")
		x.open("InstanceProfile")
		x.elem("InstanceProfileName", profile.Name)
		x.elem("InstanceProfileId", "AIPA"+fmt.Sprintf("%016X", len(profile.Name)))
		x.elem("Arn", "arn:aws:iam::123456789012:instance-profile/"+profile.Name)
		x.elem("Path", "/")
		x.elem("CreateDate", "2026-12-01T00:00:00Z")
		x.open("Roles")
		for _, r := range profile.Roles {
			x.open("member")
			x.elem("RoleName", r)
			x.elem("RoleId", "AROA0000000000000000")
			x.elem("Arn", "arn:aws:iam::123456789012:role/"+r)
			x.elem("Path", "/")
			x.elem("CreateDate", "2026-12-01T00:00:00Z")
			x.close("member")
		}
		x.close("Roles")
		x.close("InstanceProfile")
		x.close(action + "Result")
	}
	x.WriteString(`<ResponseMetadata><RequestId>fake</RequestId></ResponseMetadata></` + action + `Response>`)
	w.Header().Set("Content-Type", "text/xml")
	_, _ = w.Write([]byte(x.String()))
}
