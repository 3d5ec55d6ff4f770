package cueeval

import (
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/scanner"
	"cuelang.org/go/cue/token"
)

// maxFileNesting bounds how deeply brackets nest in a layer's file before
// it is parsed; a deeper file is not used for positions.
const maxFileNesting = 1000

// shallow reports whether brackets (braces, brackets, parentheses and
// string interpolations) nest in the CUE or JSON source src at most limit
// levels deep. It only scans src, so that a source too deep for CUE's
// recursive parser is refused before it is parsed; it never counts more
// levels than within does on the parsed source.
func shallow(src []byte, limit int) bool {
	var s scanner.Scanner
	s.Init(token.NewFile("", -1, len(src)), src, nil, 0)
	// Each open bracket, and whether it is a string interpolation's.
	var open []bool
	interpolation := false
	for {
		_, tok, _ := s.Scan()
		switch tok {
		case token.EOF:
			return true
		case token.INTERPOLATION:
			interpolation = true
		case token.LPAREN, token.LBRACE, token.LBRACK:
			open = append(open, tok == token.LPAREN && interpolation)
			interpolation = false
			if len(open) > limit {
				return false
			}
		case token.RPAREN, token.RBRACE, token.RBRACK:
			if len(open) == 0 {
				continue
			}
			closed := open[len(open)-1]
			open = open[:len(open)-1]
			if closed && strings.HasSuffix(s.ResumeInterpolation(), "(") {
				interpolation = true
			}
		}
	}
}

// within reports whether brackets nest in n at most limit levels deep.
func within(n ast.Node, limit int) bool {
	depth, exceeded := 0, false
	ast.Walk(n, func(n ast.Node) bool {
		if exceeded {
			return false
		}
		if bracket(n) {
			if depth == limit {
				exceeded = true
				return false
			}
			depth++
		}
		return true
	}, func(n ast.Node) {
		if bracket(n) {
			depth--
		}
	})
	return !exceeded
}

// bracket reports whether n opens a level of nesting.
func bracket(n ast.Node) bool {
	switch n.(type) {
	case *ast.StructLit, *ast.ListLit, *ast.ParenExpr, *ast.CallExpr, *ast.IndexExpr,
		*ast.SliceExpr, *ast.Comprehension, *ast.Interpolation:
		return true
	}
	return false
}

// flowDepth returns how deeply the brackets and braces of a YAML or JSON
// file nest, counting those in strings and comments too: an upper bound of
// the nesting of its flow collections.
func flowDepth(file []byte) int {
	depth, deepest := 0, 0
	for _, c := range file {
		switch c {
		case '[', '{':
			depth++
			deepest = max(deepest, depth)
		case ']', '}':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}
