package main

import (
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/net/html"
)

// page is one built HTML page: the ids it defines, the links it makes,
// and the text of its headings.
type page struct {
	ids      map[string]bool
	links    []string
	headings []string
}

// site is the built site, by path relative to its root ("guides/bundles/index.html").
type site struct {
	dir   string
	pages map[string]*page
}

func loadSite(dir string) (*site, error) {
	s := &site{dir: dir, pages: map[string]*page{}}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".html") {
			return err
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		doc, err := html.Parse(f)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel, _ := filepath.Rel(dir, p)
		s.pages[filepath.ToSlash(rel)] = parsePage(doc)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("site %s: %w (build it first: make docs)", dir, err)
	}
	if s.pages["index.html"] == nil {
		return nil, fmt.Errorf("site %s: no index.html (build it first: make docs)", dir)
	}
	return s, nil
}

func parsePage(doc *html.Node) *page {
	p := &page{ids: map[string]bool{}}
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			for _, a := range n.Attr {
				switch {
				case a.Key == "id":
					p.ids[a.Val] = true
				case a.Key == "href" && n.Data == "a":
					p.links = append(p.links, a.Val)
				}
			}
			if len(n.Data) == 2 && n.Data[0] == 'h' && n.Data[1] >= '1' && n.Data[1] <= '6' {
				p.headings = append(p.headings, strings.TrimSuffix(strings.TrimSpace(text(n)), "¶"))
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return p
}

func text(n *html.Node) string {
	if n.Type == html.TextNode {
		return n.Data
	}
	var b strings.Builder
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		b.WriteString(text(c))
	}
	return b.String()
}

// resolve is the page and anchor a link from the page at from points to;
// ok is false for a link that leaves the site.
func resolve(from, link string) (target, anchor string, ok bool) {
	u, err := url.Parse(link)
	if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(link, "/") {
		return "", "", false
	}
	target = from
	if u.Path != "" {
		target = path.Join(path.Dir(from), u.Path)
		if strings.HasSuffix(u.Path, "/") || target == "." {
			target = path.Join(target, "index.html")
		}
	}
	return target, u.Fragment, true
}

// checkLinks finds every internal link whose page or anchor is missing.
func (s *site) checkLinks() []error {
	var errs []error
	names := make([]string, 0, len(s.pages))
	for n := range s.pages {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, from := range names {
		if from == "404.html" {
			continue // its links are absolute
		}
		for _, link := range s.pages[from].links {
			if err := s.checkLink(from, link); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

func (s *site) checkLink(from, link string) error {
	target, anchor, ok := resolve(from, link)
	if !ok {
		return nil
	}
	p := s.pages[target]
	if p == nil {
		if !strings.HasSuffix(target, ".html") {
			if _, err := os.Stat(filepath.Join(s.dir, target)); err == nil {
				return nil // an asset
			}
		}
		return fmt.Errorf("%s: link %q: no page %s", from, link, target)
	}
	if anchor != "" && !p.ids[anchor] {
		return fmt.Errorf("%s: link %q: %s has no anchor #%s", from, link, target, anchor)
	}
	return nil
}

// sitePage is the built page of a Markdown file under docs/ ("guides/x.md"
// is "guides/x/index.html", "index.md" is "index.html").
func sitePage(md string) string {
	md = strings.TrimSuffix(md, ".md")
	if md == "index" {
		return "index.html"
	}
	if strings.HasSuffix(md, "/index") {
		return md + ".html"
	}
	return md + "/index.html"
}
