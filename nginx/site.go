package nginx

import (
	"embed"

	"sudoku-fcgi/nginx/conf"
)

// siteFS holds the project's nginx configuration: nginx.conf and the files
// it includes from beside it, the templates conf.RenderSite renders.
//
//go:embed nginx.conf sudoku-locations.conf sudoku-fastcgi.conf sudoku-www.conf sudoku-guard.conf
var siteFS embed.FS

// RenderSite writes nginx.conf and the files it includes from beside it
// into dir, for site: the image's /etc/nginx and the host stack's.
func RenderSite(dir string, site conf.Site) error {
	return conf.RenderSite(dir, site, siteFS)
}
