package engines

import (
	"fmt"
	"math"
	"strconv"
)

// The tiles and link of map_tool's maps: OpenStreetMap's.
const (
	tileURL     = "https://tile.openstreetmap.org/{z}/{x}/{y}.png"
	attribution = "© OpenStreetMap contributors"
)

// mapBlock is map_tool: markers make a map block with its centre (given,
// or the middle of the markers' bounds), its zoom (given, or the largest
// that fits the bounds: 14 for one place) and a link to the same view on
// openstreetmap.org for channels without an interactive map (one
// marker's link pins it, as spec 000's example does). The model gets the
// centre, the zoom and the link.
func mapBlock(args map[string]any) (any, map[string]any, error) {
	list, _ := args["markers"].([]any)
	var markers []any
	var minLat, maxLat, minLon, maxLon float64
	for i, x := range list {
		cells, _ := x.([]any)
		what := fmt.Sprintf("markers[%d]", i)
		if len(cells) < 2 || len(cells) > 3 {
			return nil, nil, errorf("%s must be [lat, lon] or [lat, lon, label], got %d values", what, len(cells))
		}
		lat, lon, err := point(cells, what)
		if err != nil {
			return nil, nil, err
		}
		mk := map[string]any{"lat": lat, "lon": lon}
		if len(cells) == 3 {
			l, ok := cells[2].(string)
			if !ok {
				return nil, nil, errorf("%s: its third value is the label, a string", what)
			}
			mk["label"] = l
		}
		if i == 0 || lat < minLat {
			minLat = lat
		}
		if i == 0 || lat > maxLat {
			maxLat = lat
		}
		if i == 0 || lon < minLon {
			minLon = lon
		}
		if i == 0 || lon > maxLon {
			maxLon = lon
		}
		markers = append(markers, mk)
	}
	var lat, lon float64
	if c, ok := args["center"].([]any); ok {
		if len(c) != 2 {
			return nil, nil, errorf("center must be [lat, lon], got %d values", len(c))
		}
		var err error
		if lat, lon, err = point(c, "center"); err != nil {
			return nil, nil, err
		}
	} else if len(markers) == 0 {
		return nil, nil, errorf("markers is empty: a map needs a marker, or a center")
	} else {
		lat, lon = round((minLat+maxLat)/2), round((minLon+maxLon)/2)
	}
	zoom := 14
	if z, ok := number(args["zoom"]); ok {
		if z < 0 || z > 19 {
			return nil, nil, errorf("zoom must be from 0 to 19, got %v", z)
		}
		zoom = int(z)
	} else if span := math.Max((maxLat-minLat)/math.Cos((minLat+maxLat)/2*math.Pi/180), maxLon-minLon); len(markers) > 1 && span > 0 {
		// At zoom z the world is 256·2^z pixels wide: the largest z at
		// which the bounds (latitude stretched as Mercator does) take at
		// most 256 pixels, which any map's box holds with a margin.
		zoom = max(1, min(int(math.Floor(math.Log2(360/span))), 16))
	}
	link := fmt.Sprintf("https://www.openstreetmap.org/#map=%d/%s/%s", zoom, coord(lat), coord(lon))
	if len(markers) == 1 {
		m := markers[0].(map[string]any)
		link = fmt.Sprintf("https://www.openstreetmap.org/?mlat=%s&mlon=%s#map=%d/%s/%s",
			coord(m["lat"].(float64)), coord(m["lon"].(float64)), zoom, coord(lat), coord(lon))
	}
	if markers == nil {
		markers = []any{}
	}
	center := map[string]any{"lat": lat, "lon": lon}
	block := map[string]any{"type": "map", "center": center, "zoom": zoom, "markers": markers,
		"tile_url": tileURL, "attribution": attribution, "link": link}
	content := map[string]any{"shown": "map", "markers": len(markers), "center": center, "zoom": zoom, "link": link}
	if t := str(args, "title"); t != "" {
		block["title"], content["title"] = t, t
	}
	return content, block, nil
}

// point reads [lat, lon, ...] of a marker or the centre.
func point(cells []any, what string) (float64, float64, error) {
	lat, ok1 := number(cells[0])
	lon, ok2 := number(cells[1])
	if !ok1 || !ok2 {
		return 0, 0, errorf("%s: lat and lon must be numbers", what)
	}
	if math.Abs(lat) > 90 || math.Abs(lon) > 180 {
		return 0, 0, errorf("%s: lat must be in [-90, 90] and lon in [-180, 180], got %v, %v", what, lat, lon)
	}
	return lat, lon, nil
}

// round keeps 6 decimals (about 10 cm).
func round(f float64) float64 { return math.Round(f*1e6) / 1e6 }

// coord writes a coordinate as short as it is.
func coord(f float64) string { return strconv.FormatFloat(round(f), 'f', -1, 64) }
