package fake

import (
	"html"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
)

// list returns the values of a flattened Query list: prefix.1, prefix.2, … (or their sub-prefixes
// when sub is true: prefix.1.X…).
func indices(p url.Values, prefix string) []int {
	seen := map[int]bool{}
	for k := range p {
		rest, ok := strings.CutPrefix(k, prefix+".")
		if !ok {
			continue
		}
		head, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(head); err == nil {
			seen[n] = true
		}
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// values returns prefix.1, prefix.2… as strings.
func values(p url.Values, prefix string) []string {
	var out []string
	for _, i := range indices(p, prefix) {
		out = append(out, p.Get(prefix+"."+strconv.Itoa(i)))
	}
	return out
}

// sub returns the parameters under prefix., with the prefix stripped.
func sub(p url.Values, prefix string) url.Values {
	out := url.Values{}
	for k, v := range p {
		if rest, ok := strings.CutPrefix(k, prefix+"."); ok {
			out[rest] = v
		}
	}
	return out
}

// item returns prefix.i's sub-parameters.
func item(p url.Values, prefix string, i int) url.Values { return sub(p, prefix+"."+strconv.Itoa(i)) }

// filter is one Filter.N.
type filter struct {
	name   string
	values []string
}

func filters(p url.Values) []filter {
	var out []filter
	for _, i := range indices(p, "Filter") {
		f := item(p, "Filter", i)
		out = append(out, filter{name: f.Get("Name"), values: values(f, "Value")})
	}
	return out
}

// matches reports whether a resource with these attributes and tags passes every filter.
func matches(fs []filter, attrs map[string]string, tags map[string]string) bool {
	for _, f := range fs {
		ok := false
		for _, want := range f.values {
			switch {
			case f.name == "tag-key":
				_, ok = tags[want]
			case strings.HasPrefix(f.name, "tag:"):
				v, has := tags[strings.TrimPrefix(f.name, "tag:")]
				ok = has && glob(want, v)
			default:
				v, has := attrs[f.name]
				ok = has && glob(want, v)
			}
			if ok {
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func glob(pattern, v string) bool {
	ok, err := path.Match(pattern, v)
	return err == nil && ok
}

// xb builds an XML document.
type xb struct{ strings.Builder }

func (x *xb) open(name string)  { x.WriteString("<" + name + ">") }
func (x *xb) close(name string) { x.WriteString("</" + name + ">") }
func (x *xb) elem(name, v string) {
	x.open(name)
	x.WriteString(esc(v))
	x.close(name)
}
func (x *xb) tags(tags map[string]string) {
	x.open("tagSet")
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		x.open("item")
		x.elem("key", k)
		x.elem("value", tags[k])
		x.close("item")
	}
	x.close("tagSet")
}

func esc(s string) string { return html.EscapeString(s) }

// page cuts items [start, start+size) by a numeric NextToken.
func page(p url.Values, n, size int) (start, end int, next string) {
	if m, err := strconv.Atoi(p.Get("MaxResults")); err == nil && m > 0 && m < size {
		size = m
	}
	start, _ = strconv.Atoi(p.Get("NextToken"))
	end = min(start+size, n)
	if end < n {
		next = strconv.Itoa(end)
	}
	return start, end, next
}

// tagSpecs returns TagSpecification.N's tags for a resource type.
func tagSpecs(p url.Values, resourceType string) map[string]string {
	out := map[string]string{}
	for _, i := range indices(p, "TagSpecification") {
		spec := item(p, "TagSpecification", i)
		if spec.Get("ResourceType") != resourceType {
			continue
		}
		for _, j := range indices(spec, "Tag") {
			t := item(spec, "Tag", j)
			out[t.Get("Key")] = t.Get("Value")
		}
	}
	return out
}
