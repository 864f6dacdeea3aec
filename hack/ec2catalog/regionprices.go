package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/joist-dev/joist/catalog/ec2"
)

// regionPriceFiles are Karpenter's generated on-demand price tables for the partitions whose
// prices differ from us-east-1 at start-up and cannot (GovCloud: no Pricing API) or need not wait
// for the Pricing API: China (CNY) and GovCloud (USD).
var regionPriceFiles = []struct{ path, currency string }{
	{"pkg/providers/pricing/zz_generated.pricing_aws_cn.go", "CNY"},
	{"pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go", "USD"},
}

// runRegionPrices writes catalog/ec2's regionprices.json from the checkout's China and GovCloud tables.
func runRegionPrices(repo, out string) error {
	if repo == "" {
		return fmt.Errorf("-karpenter-repo (or $KARPENTER_PROVIDER_AWS) is required")
	}
	file := ec2.RegionPriceFile{Source: "aws/karpenter-provider-aws generated China and GovCloud pricing", Regions: map[string]ec2.RegionPrices{}}
	for _, f := range regionPriceFiles {
		src, err := os.ReadFile(filepath.Join(repo, f.path))
		if err != nil {
			return err
		}
		date, tables, err := parseRegionPrices(src)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", f.path, err)
		}
		for region, prices := range tables {
			file.Regions[region] = ec2.RegionPrices{Date: date, Currency: f.currency, Prices: prices}
		}
	}
	b, err := json.MarshalIndent(file, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// parseRegionPrices reads every region's map of a generated pricing file and its date.
func parseRegionPrices(src []byte) (time.Time, map[string]map[string]float64, error) {
	m := generatedAt.FindSubmatch(src)
	if m == nil {
		return time.Time{}, nil, fmt.Errorf("no 'generated at' comment")
	}
	date, err := time.Parse(time.RFC3339, string(m[1]))
	if err != nil {
		return time.Time{}, nil, err
	}
	f, err := parser.ParseFile(token.NewFileSet(), "pricing.go", src, 0)
	if err != nil {
		return time.Time{}, nil, err
	}
	out := map[string]map[string]float64{}
	ast.Inspect(f, func(n ast.Node) bool {
		kv, ok := n.(*ast.KeyValueExpr)
		if !ok {
			return true
		}
		key, ok := kv.Key.(*ast.BasicLit)
		inner, isMap := kv.Value.(*ast.CompositeLit)
		if !ok || key.Kind != token.STRING || !isMap {
			return true
		}
		region, _ := strconv.Unquote(key.Value)
		prices := map[string]float64{}
		for _, e := range inner.Elts {
			p, ok := e.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			k, kok := p.Key.(*ast.BasicLit)
			v, vok := p.Value.(*ast.BasicLit)
			if !kok || !vok || v.Kind != token.FLOAT {
				continue
			}
			name, _ := strconv.Unquote(k.Value)
			price, _ := strconv.ParseFloat(v.Value, 64)
			if price > 0 && strings.Contains(name, ".") {
				prices[name] = price
			}
		}
		if len(prices) > 0 {
			out[region] = prices
		}
		return false
	})
	if len(out) == 0 {
		return time.Time{}, nil, fmt.Errorf("no region price maps")
	}
	return date, out, nil
}
