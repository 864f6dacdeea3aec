package fake

// str dereferences an optional string from the SDK ("" for nil).
func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
