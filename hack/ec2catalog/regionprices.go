package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/joist-dev/joist/catalog/ec2"
)

// regionPriceFiles are Karpenter's generated on-demand price tables for China (CNY) and GovCloud
// (USD, no Pricing API in that partition).
var regionPriceFiles = []struct{ path, currency string }{
	{"pkg/providers/pricing/zz_generated.pricing_aws_cn.go", "CNY"},
	{"pkg/providers/pricing/zz_generated.pricing_aws_us_gov.go", "USD"},
}

// minAgreement is the least share of the instance-type data's own-region prices (us-east-1, from
// Karpenter) that another source must quote the same for that region to be trusted for the others.
const minAgreement = 0.9

// runRegionPrices writes catalog/ec2's regionprices.json: per region, the newest table among the
// checkout's China and GovCloud files and the commercial source's tables; never the data's own region, whose newer prices are in instancetypes.json.
func runRegionPrices(repo, commit, out string, commercial func() (pricesSource, error)) error {
	if repo == "" {
		return fmt.Errorf("-karpenter-repo (or $KARPENTER_PROVIDER_AWS) is required")
	}
	if commit == "" {
		commit = gitCommit(repo)
	}
	var sources []pricesSource
	for _, f := range regionPriceFiles {
		src, err := os.ReadFile(filepath.Join(repo, f.path))
		if err != nil {
			return err
		}
		date, tables, err := parseRegionPrices(src)
		if err != nil {
			return fmt.Errorf("parsing %s: %w", f.path, err)
		}
		sources = append(sources, pricesSource{name: "aws/karpenter-provider-aws@" + commit + " " + f.path, date: date, currency: f.currency, tables: tables})
	}
	com, err := commercial()
	if err != nil {
		return err
	}
	sources = append(sources, com)
	file, err := mergeRegionPrices(ec2.Embedded(), sources)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(file, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(out, append(b, '\n'), 0o644)
}

// mergeRegionPrices keeps, per region, the newest source's table.
func mergeRegionPrices(data *ec2.Data, sources []pricesSource) (*ec2.RegionPriceFile, error) {
	known := map[string]float64{}
	for _, info := range data.InstanceTypes {
		known[info.Name] = info.OnDemandPrice
	}
	file := &ec2.RegionPriceFile{
		Source:  "per region, the newest of: aws/karpenter-provider-aws's generated China and GovCloud tables; ec2instances.info's data for the other regions (hack/ec2catalog)",
		Regions: map[string]ec2.RegionPrices{},
	}
	for _, s := range sources {
		if own, ok := s.tables[data.PricesRegion]; ok {
			if err := checkAgreement(s.name, data.PricesRegion, own, known); err != nil {
				return nil, err
			}
		}
		for region, table := range s.tables {
			if region == data.PricesRegion {
				continue
			}
			if prev, ok := file.Regions[region]; ok && !s.date.After(prev.Date) {
				continue
			}
			// Every type, also those the data does not describe: the AWS provider prices the types
			// DescribeInstanceTypes returns, and GovCloud has no Pricing API to fill gaps.
			prices := map[string]float64{}
			for name, price := range table {
				if price > 0 {
					prices[name] = price
				}
			}
			if len(prices) > 0 {
				file.Regions[region] = ec2.RegionPrices{Date: s.date, Currency: s.currency, Source: s.name, Prices: prices}
			}
		}
	}
	if len(file.Regions) == 0 {
		return nil, fmt.Errorf("no region prices for the embedded instance types")
	}
	return file, nil
}

// checkAgreement refuses a source whose prices for the data's own region mostly differ from the
// data's: a parsing error or a different price kind (OS, tenancy) would show there first.
func checkAgreement(name, region string, theirs, ours map[string]float64) error {
	var common, same int
	for it, p := range theirs {
		mine, ok := ours[it]
		if !ok || mine <= 0 {
			continue
		}
		common++
		if math.Abs(p-mine) <= 0.005*mine {
			same++
		}
	}
	if common == 0 || float64(same) < minAgreement*float64(common) {
		return fmt.Errorf("%s quotes %d of %d shared %s prices as instancetypes.json does (want ≥ %.0f%%): not the same kind of price", name, same, common, region, minAgreement*100)
	}
	fmt.Fprintf(os.Stderr, "ec2catalog: %s agrees with instancetypes.json on %d of %d %s prices\n", name, same, common, region)
	return nil
}

// gitCommit is the checkout's HEAD, or "unknown-commit" when it is not a git work tree.
func gitCommit(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown-commit"
	}
	return strings.TrimSpace(string(out))
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
