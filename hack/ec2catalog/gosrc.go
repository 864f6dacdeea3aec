package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"time"
)

type eniLimits struct{ enis, ipv4 int64 }

// parseVPCLimits reads the Limits map literal: per type, the default network card's maximum
// network interfaces and IPv4PerInterface.
func parseVPCLimits(src []byte) (map[string]eniLimits, error) {
	f, err := parser.ParseFile(token.NewFileSet(), "vpclimits.go", src, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]eniLimits{}
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		key, ok := kv.Key.(*ast.BasicLit)
		body, ok2 := kv.Value.(*ast.CompositeLit)
		if !ok || !ok2 || key.Kind != token.STRING {
			return true
		}
		name, _ := strconv.Unquote(key.Value)
		fields := intFields(body)
		l := eniLimits{enis: fields["Interface"], ipv4: fields["IPv4PerInterface"]}
		if cards := cardInterfaces(body); len(cards) > 0 {
			if m, ok := cards[fields["DefaultNetworkCardIndex"]]; ok {
				l.enis = m
			}
		}
		out[name] = l
		return false
	})
	if len(out) == 0 {
		return nil, fmt.Errorf("no Limits entries found")
	}
	return out, nil
}

func intFields(lit *ast.CompositeLit) map[string]int64 {
	out := map[string]int64{}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if !ok {
			continue
		}
		id, ok := kv.Key.(*ast.Ident)
		v, ok2 := kv.Value.(*ast.BasicLit)
		if ok && ok2 && v.Kind == token.INT {
			n, _ := strconv.ParseInt(v.Value, 10, 64)
			out[id.Name] = n
		}
	}
	return out
}

// cardInterfaces maps NetworkCardIndex → MaximumNetworkInterfaces.
func cardInterfaces(lit *ast.CompositeLit) map[int64]int64 {
	out := map[int64]int64{}
	for _, e := range lit.Elts {
		kv, ok := e.(*ast.KeyValueExpr)
		if id, isID := kv.Key.(*ast.Ident); !ok || !isID || id.Name != "NetworkCards" {
			continue
		}
		cards, ok := kv.Value.(*ast.CompositeLit)
		if !ok {
			continue
		}
		for _, c := range cards.Elts {
			if card, ok := c.(*ast.CompositeLit); ok {
				f := intFields(card)
				out[f["NetworkCardIndex"]] = f["MaximumNetworkInterfaces"]
			}
		}
	}
	return out
}

var generatedAt = regexp.MustCompile(`generated at (\S+) for (\S+)`)

// parsePricing reads the on-demand price map and the "generated at <time> for <region>" comment.
func parsePricing(src []byte) (string, time.Time, map[string]float64, error) {
	m := generatedAt.FindSubmatch(src)
	if m == nil {
		return "", time.Time{}, nil, fmt.Errorf("no 'generated at' comment")
	}
	date, err := time.Parse(time.RFC3339, string(m[1]))
	if err != nil {
		return "", time.Time{}, nil, err
	}
	region := string(m[2])
	f, err := parser.ParseFile(token.NewFileSet(), "pricing.go", src, 0)
	if err != nil {
		return "", time.Time{}, nil, err
	}
	prices := map[string]float64{}
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		key, ok := kv.Key.(*ast.BasicLit)
		if !ok || key.Kind != token.STRING {
			return true
		}
		k, _ := strconv.Unquote(key.Value)
		if k == region {
			return true // descend into this region's map
		}
		if v, ok := kv.Value.(*ast.BasicLit); ok && v.Kind == token.FLOAT {
			p, _ := strconv.ParseFloat(v.Value, 64)
			prices[k] = p
		}
		return false
	})
	if len(prices) == 0 {
		return "", time.Time{}, nil, fmt.Errorf("no prices for %s", region)
	}
	return region, date, prices, nil
}
