package fake

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// Policy is an IAM identity policy document, evaluated as IAM does for the subset of the language
// Joist's documented policy and Karpenter's published controller policy use: Allow and Deny
// statements (an explicit Deny wins, no Allow means an implicit deny), Action and Resource lists
// with * and ? wildcards (actions case-insensitively), and Condition blocks whose operators are
// StringEquals, StringNotEquals, StringLike, StringNotLike (each also …IfExists), optionally
// qualified by ForAllValues: or ForAnyValue:. Within a block every key must match (AND), and one of
// a key's values suffices (OR). NotAction, NotResource, Principal and policy variables are not
// supported: parsing a document that uses them fails rather than evaluating it wrongly.
type Policy struct {
	Statements []Statement
}

// Statement is one parsed statement.
type Statement struct {
	Sid, Effect string
	Actions     []string
	Resources   []string
	Conditions  []Condition
}

// Condition is one operator/key pair of a Condition block.
type Condition struct {
	// Operator is the base operator (StringEquals…), SetOp "" / "ForAllValues" / "ForAnyValue".
	Operator, SetOp string
	IfExists        bool
	Key             string
	Values          []string
}

// AuthzRequest is one authorization IAM evaluates: an action on a resource with the request's
// context keys (aws:RequestTag/…, aws:ResourceTag/…, aws:TagKeys, aws:RequestedRegion,
// ec2:CreateAction, iam:PassedToService). Key names are matched case-insensitively.
type AuthzRequest struct {
	Action, Resource string
	Context          map[string][]string
}

var supportedOperators = map[string]bool{"StringEquals": true, "StringNotEquals": true, "StringLike": true, "StringNotLike": true}

// ParsePolicy parses an identity policy document.
func ParsePolicy(doc []byte) (*Policy, error) {
	var raw struct {
		Version   string
		Statement json.RawMessage
	}
	if err := json.Unmarshal(doc, &raw); err != nil {
		return nil, fmt.Errorf("parsing policy: %w", err)
	}
	var stmts []map[string]json.RawMessage
	if err := json.Unmarshal(raw.Statement, &stmts); err != nil {
		var one map[string]json.RawMessage
		if err2 := json.Unmarshal(raw.Statement, &one); err2 != nil {
			return nil, fmt.Errorf("parsing policy statements: %w", err)
		}
		stmts = []map[string]json.RawMessage{one}
	}
	p := &Policy{}
	for i, m := range stmts {
		st := Statement{}
		for k, v := range m {
			var err error
			switch k {
			case "Sid":
				err = json.Unmarshal(v, &st.Sid)
			case "Effect":
				err = json.Unmarshal(v, &st.Effect)
			case "Action":
				st.Actions, err = stringOrList(v)
			case "Resource":
				st.Resources, err = stringOrList(v)
			case "Condition":
				st.Conditions, err = parseConditions(v)
			default:
				err = fmt.Errorf("the fake does not evaluate %s", k)
			}
			if err != nil {
				return nil, fmt.Errorf("statement %d (%s): %s: %w", i, st.Sid, k, err)
			}
		}
		if st.Effect != "Allow" && st.Effect != "Deny" {
			return nil, fmt.Errorf("statement %d (%s): Effect %q is neither Allow nor Deny", i, st.Sid, st.Effect)
		}
		if len(st.Actions) == 0 || len(st.Resources) == 0 {
			return nil, fmt.Errorf("statement %d (%s): needs Action and Resource", i, st.Sid)
		}
		p.Statements = append(p.Statements, st)
	}
	return p, nil
}

func stringOrList(v json.RawMessage) ([]string, error) {
	var one string
	if err := json.Unmarshal(v, &one); err == nil {
		return []string{one}, nil
	}
	var many []string
	err := json.Unmarshal(v, &many)
	return many, err
}

func parseConditions(v json.RawMessage) ([]Condition, error) {
	var blocks map[string]map[string]json.RawMessage
	if err := json.Unmarshal(v, &blocks); err != nil {
		return nil, err
	}
	var out []Condition
	for op, keys := range blocks {
		c := Condition{Operator: op}
		if set, rest, ok := strings.Cut(op, ":"); ok {
			if set != "ForAllValues" && set != "ForAnyValue" {
				return nil, fmt.Errorf("unknown set operator %s", set)
			}
			c.SetOp, c.Operator = set, rest
		}
		if base, ok := strings.CutSuffix(c.Operator, "IfExists"); ok {
			c.Operator, c.IfExists = base, true
		}
		if !supportedOperators[c.Operator] {
			return nil, fmt.Errorf("the fake does not evaluate condition operator %s", op)
		}
		for key, raw := range keys {
			vals, err := stringOrList(raw)
			if err != nil {
				return nil, fmt.Errorf("%s %s: %w", op, key, err)
			}
			cc := c
			cc.Key, cc.Values = key, vals
			out = append(out, cc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Allows reports whether the policy allows the request: some Allow statement matches and no Deny does.
func (p *Policy) Allows(r AuthzRequest) bool {
	allowed := false
	for _, st := range p.Statements {
		if !st.matches(r) {
			continue
		}
		if st.Effect == "Deny" {
			return false
		}
		allowed = true
	}
	return allowed
}

func (st Statement) matches(r AuthzRequest) bool {
	ok := false
	for _, a := range st.Actions {
		ok = ok || wildcard(strings.ToLower(a), strings.ToLower(r.Action))
	}
	if !ok {
		return false
	}
	ok = false
	for _, res := range st.Resources {
		ok = ok || wildcard(res, r.Resource)
	}
	if !ok {
		return false
	}
	for _, c := range st.Conditions {
		if !c.holds(r.Context) {
			return false
		}
	}
	return true
}

func (c Condition) holds(ctx map[string][]string) bool {
	var got []string
	present := false
	for k, v := range ctx {
		if strings.EqualFold(k, c.Key) {
			got, present = v, true
		}
	}
	match := func(v string) bool {
		for _, want := range c.Values {
			switch c.Operator {
			case "StringEquals", "StringNotEquals":
				if v == want {
					return true
				}
			case "StringLike", "StringNotLike":
				if wildcard(want, v) {
					return true
				}
			}
		}
		return false
	}
	negated := c.Operator == "StringNotEquals" || c.Operator == "StringNotLike"
	switch c.SetOp {
	case "ForAllValues": // true for an absent or empty key, as in IAM
		for _, v := range got {
			if match(v) == negated {
				return false
			}
		}
		return true
	case "ForAnyValue":
		for _, v := range got {
			if match(v) != negated {
				return true
			}
		}
		return false
	}
	if !present || len(got) == 0 {
		return c.IfExists || negated
	}
	if negated {
		for _, v := range got {
			if match(v) {
				return false
			}
		}
		return true
	}
	for _, v := range got {
		if match(v) {
			return true
		}
	}
	return false
}

// wildcard matches IAM's * (any run, including /) and ? (one character).
func wildcard(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if wildcard(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && wildcard(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && wildcard(pattern[1:], s[1:])
}

// PolicyFromMarkdown parses the first ```json block after the line containing heading in a
// Markdown document (docs/aws.md's controller policy), with placeholders replaced (REGION,
// ACCOUNT, CLUSTER → values), so tests run under the policy users are told to create.
func PolicyFromMarkdown(md []byte, heading string, replace map[string]string) (*Policy, error) {
	text := string(md)
	i := strings.Index(text, heading)
	if i < 0 {
		return nil, fmt.Errorf("no %q in the document", heading)
	}
	text = text[i:]
	start := strings.Index(text, "```json\n")
	if start < 0 {
		return nil, fmt.Errorf("no ```json block after %q", heading)
	}
	text = text[start+len("```json\n"):]
	end := strings.Index(text, "\n```")
	if end < 0 {
		return nil, fmt.Errorf("unterminated ```json block after %q", heading)
	}
	var pairs []string
	for k, v := range replace {
		pairs = append(pairs, k, v)
	}
	return ParsePolicy([]byte(strings.NewReplacer(pairs...).Replace(text[:end])))
}
