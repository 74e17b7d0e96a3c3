//go:build goexperiment.simd && amd64 && !purego

package solver

import (
	"math/bits"
	"simd/archsimd"
)

// The vector engine closes digits 0-7 at once: lane d of a 256-bit vector
// holds digit d's 27-bit word of one band, one vector per band; digit 8
// goes through the scalar tables. Band and stack
// closure are the same deductions as closeDigit's, written as bit
// operations (a triad lies on a permutation when the 2x2 minor left by its
// row and box has one) instead of table lookups, so that they run lane by
// lane. Propagation applies the same rules as propagate to the same
// fixpoint, in another order, so both engines guess on the same states.
// It runs 1.24-1.44x the scalar engine's instructions and is slower (see
// RESULTS.md); the images and make build leave it out.

// vecEngine is true when the CPU runs the vector engine (AVX2).
var vecEngine = archsimd.X86.AVX2()

func engineName() string {
	if vecEngine {
		return "simd-avx2"
	}
	return "scalar"
}

type vec = archsimd.Uint32x8

func bc(c uint32) vec { return archsimd.BroadcastUint32x8(c) }

// Right shifts go through ShiftRight (VPSRLVD) with a broadcast count:
// ShiftAllRight with a constant compiles to a count loaded by a legacy SSE
// MOVQ, and mixing that with 256-bit code made the engine about 10x slower
// (RESULTS.md). For the same reason left shifts keep constant counts and
// the kernels end with ClearAVXUpperBits before scalar code runs.

// rowNext and rowPrev give each 9-bit row of a 27-bit word the value of
// the next (previous) row, cyclically.
func rowNext(x vec) vec { return x.ShiftRight(bc(9)).Or(x.ShiftAllLeft(18)).And(bc(bandAll)) }
func rowPrev(x vec) vec { return x.ShiftRight(bc(18)).Or(x.ShiftAllLeft(9)).And(bc(bandAll)) }

// boxNext and boxPrev do the same for the three 3-bit groups of a row.
func boxNext(x vec) vec {
	return x.ShiftRight(bc(3)).And(bc(0o077077077)).Or(x.ShiftAllLeft(6).And(bc(0o700700700)))
}
func boxPrev(x vec) vec {
	return x.ShiftRight(bc(6)).And(bc(0o007007007)).Or(x.ShiftAllLeft(3).And(bc(0o770770770)))
}

// bitNext and bitPrev do the same for the three bits of a group.
func bitNext(x vec) vec {
	return x.ShiftRight(bc(1)).And(bc(0o333333333)).Or(x.ShiftAllLeft(2).And(bc(0o444444444)))
}
func bitPrev(x vec) vec {
	return x.ShiftRight(bc(2)).And(bc(0o111111111)).Or(x.ShiftAllLeft(1).And(bc(0o666666666)))
}

// bandStep is the band closure of a: the cells whose triad (row, box) lies
// on a row-to-box permutation, and those triads, each at its group's first
// bit.
func bandStep(a vec) (n, keep vec) {
	t := a.Or(a.ShiftRight(bc(1))).Or(a.ShiftRight(bc(2))).And(bc(0o111111111))
	r1, r2 := rowNext(t), rowPrev(t)
	keep = t.And(boxNext(r1).And(boxPrev(r2)).Or(boxPrev(r1).And(boxNext(r2))))
	return a.And(keep.Or(keep.ShiftAllLeft(1)).Or(keep.ShiftAllLeft(2))), keep
}

// columns returns the 9 columns a band word occupies.
func columns(n vec) vec {
	return n.Or(n.ShiftRight(bc(9))).Or(n.ShiftRight(bc(18))).And(bc(511))
}

// expand spreads 9 columns over the three rows of a band.
func expand(k vec) vec { return k.Or(k.ShiftAllLeft(9)).Or(k.ShiftAllLeft(18)) }

// compact gathers the bits 3j (j = 0-8) of x into bits j.
func compact(x vec) vec {
	x = x.Or(x.ShiftRight(bc(2))).And(bc(0o0303030303))
	x = x.Or(x.ShiftRight(bc(4))).And(bc(0xF | 0xF<<12 | 0xF<<24))
	x = x.Or(x.ShiftRight(bc(8))).And(bc(0xFF | 0xFF<<24))
	return x.Or(x.ShiftRight(bc(16))).And(bc(511))
}

// transposeVec is transpose lane by lane.
func transposeVec(x vec) vec {
	const (
		diag = 7 | 7<<12 | 7<<24
		by6  = 7<<3 | 7<<15
		by12 = 7 << 6
	)
	return x.And(bc(diag)).
		Or(x.And(bc(by6)).ShiftAllLeft(6)).Or(x.ShiftRight(bc(6)).And(bc(by6))).
		Or(x.And(bc(by12)).ShiftAllLeft(12)).Or(x.ShiftRight(bc(12)).And(bc(by12)))
}

// closeAll applies band and stack closure to digits 0-7 until nothing
// changes and leaves their patterns in s.pat. It reports false on a
// contradiction.
func (s *state) closeAll() bool {
	a0 := archsimd.LoadUint32x8((*[8]uint32)(s.cand[0][:8]))
	a1 := archsimd.LoadUint32x8((*[8]uint32)(s.cand[1][:8]))
	a2 := archsimd.LoadUint32x8((*[8]uint32)(s.cand[2][:8]))
	zero := bc(0)
	var k0, k1, k2, kt vec
	for {
		var n0, n1, n2 vec
		n0, k0 = bandStep(a0)
		n1, k1 = bandStep(a1)
		n2, k2 = bandStep(a2)
		// Stacks: a word whose rows are the bands and whose groups are
		// the stacks, one bit per column.
		t := columns(n0).Or(columns(n1).ShiftAllLeft(9)).Or(columns(n2).ShiftAllLeft(18))
		r1, r2 := rowNext(t), rowPrev(t)
		kt = t.And(bitNext(r1).And(bitPrev(r2)).Or(bitPrev(r1).And(bitNext(r2))))
		// A stack with no permutation left: a contradiction (a band
		// left empty by its closure empties every stack).
		empty := kt.And(bc(0o007007007)).Equal(zero).
			Or(kt.And(bc(0o070070070)).Equal(zero)).
			Or(kt.And(bc(0o700700700)).Equal(zero))
		if empty.ToBits() != 0 {
			archsimd.ClearAVXUpperBits()
			return false
		}
		a0 = n0.And(expand(kt.And(bc(511))))
		a1 = n1.And(expand(kt.ShiftRight(bc(9)).And(bc(511))))
		a2 = n2.And(expand(kt.ShiftRight(bc(18))))
		if a0.Xor(n0).Or(a1.Xor(n1)).Or(a2.Xor(n2)).IsZero() {
			break
		}
	}
	a0.Store((*[8]uint32)(s.cand[0][:8]))
	a1.Store((*[8]uint32)(s.cand[1][:8]))
	a2.Store((*[8]uint32)(s.cand[2][:8]))
	var h, v [8]uint32
	compact(k0).Or(compact(k1).ShiftAllLeft(9)).Or(compact(k2).ShiftAllLeft(18)).Store(&h)
	transposeVec(kt).Store(&v)
	archsimd.ClearAVXUpperBits()
	for d := range 8 {
		s.pat[d] = uint64(h[d]) | uint64(v[d])<<32
	}
	return true
}

// closeOnly is closeDigit's closure without the hidden singles.
func (s *state) closeOnly(d int) bool {
	t := tab
	a0, a1, a2 := s.cand[0][d], s.cand[1][d], s.cand[2][d]
	for {
		x0 := uint(t.triad[a0&511]) | uint(t.triad[a0>>9&511])<<3 | uint(t.triad[a0>>18&511])<<6
		n0 := a0 & t.bandKeep[x0&511]
		x1 := uint(t.triad[a1&511]) | uint(t.triad[a1>>9&511])<<3 | uint(t.triad[a1>>18&511])<<6
		n1 := a1 & t.bandKeep[x1&511]
		x2 := uint(t.triad[a2&511]) | uint(t.triad[a2>>9&511])<<3 | uint(t.triad[a2>>18&511])<<6
		n2 := a2 & t.bandKeep[x2&511]
		h := uint32(t.perm[x0&511]) | uint32(t.perm[x1&511])<<9 | uint32(t.perm[x2&511])<<18
		c0 := (n0 | n0>>9 | n0>>18) & 511
		c1 := (n1 | n1>>9 | n1>>18) & 511
		c2 := (n2 | n2>>9 | n2>>18) & 511
		v0 := c0&7 | (c1&7)<<3 | (c2&7)<<6
		v1 := c0>>3&7 | (c1>>3&7)<<3 | (c2>>3&7)<<6
		v2 := c0>>6 | (c1>>6)<<3 | (c2>>6)<<6
		p0, p1, p2 := t.perm[v0], t.perm[v1], t.perm[v2]
		if p0 == 0 || p1 == 0 || p2 == 0 {
			return false
		}
		k0 := uint32(p0&7) | uint32(p1&7)<<3 | uint32(p2&7)<<6
		k1 := uint32(p0>>3&7) | uint32(p1>>3&7)<<3 | uint32(p2>>3&7)<<6
		k2 := uint32(p0>>6) | uint32(p1>>6)<<3 | uint32(p2>>6)<<6
		a0, a1, a2 = n0&t.colExpand[k0], n1&t.colExpand[k1], n2&t.colExpand[k2]
		if a0 == n0 && a1 == n1 && a2 == n2 {
			s.pat[d] = uint64(h) | (uint64(p0)|uint64(p1)<<9|uint64(p2)<<18)<<32
			break
		}
	}
	s.cand[0][d], s.cand[1][d], s.cand[2][d] = a0, a1, a2
	return true
}

// rowSinglesVec is rowSingles lane by lane: a row's 9 bits y hold one
// cell when y&(y-1) == 0 (an empty row gives 0 either way). The rows are
// unrolled so that every left shift has a constant count.
func rowSinglesVec(a vec) vec {
	zero, one, row := bc(0), bc(1), bc(511)
	y0 := a.And(row)
	y1 := a.ShiftRight(bc(9)).And(row)
	y2 := a.ShiftRight(bc(18))
	p := y0.Masked(y0.And(y0.Sub(one)).Equal(zero))
	p = p.Or(y1.Masked(y1.And(y1.Sub(one)).Equal(zero)).ShiftAllLeft(9))
	return p.Or(y2.Masked(y2.And(y2.Sub(one)).Equal(zero)).ShiftAllLeft(18))
}

// claimAll gives every unsolved cell that a digit holds alone in its row
// to that digit, as claim does. It returns the digits that lost
// candidates, and false on a contradiction (two digits alone in their rows
// in one cell).
func (s *state) claimAll() (lost uint32, ok bool) {
	for b := range s.cand {
		band := (*[8]uint32)(s.cand[b][:8])
		a := archsimd.LoadUint32x8(band)
		un := s.unsolved[b]
		pv := rowSinglesVec(a).And(bc(un))
		p8 := rowSingles(s.cand[b][8]) & un
		if p8 == 0 && pv.IsZero() {
			continue
		}
		var p [8]uint32
		pv.Store(&p)
		once, twice := p8, uint32(0)
		for _, m := range &p {
			twice |= once & m
			once |= m
		}
		if twice != 0 {
			archsimd.ClearAVXUpperBits()
			return 0, false
		}
		s.unsolved[b] = un &^ once
		na := a.AndNot(bc(once).AndNot(pv))
		if l := na.NotEqual(a).ToBits(); l != 0 {
			lost |= uint32(l)
			na.Store(band)
		}
		if m := s.cand[b][8]; m&(once&^p8) != 0 {
			lost |= 1 << 8
			s.cand[b][8] = m &^ (once &^ p8)
		}
	}
	archsimd.ClearAVXUpperBits()
	return lost, true
}

// propagateVec is propagate with closeAll and claimAll.
func (s *state) propagateVec(changed uint32) bool {
	t := tab
	for {
		// Close the changed digits (all of 0-7 when one of them
		// changed: a vector costs the same) and take their row singles,
		// until no digit loses a candidate.
		for changed != 0 {
			if changed&0xFF != 0 && !s.closeAll() {
				return false
			}
			if changed&(1<<8) != 0 && !s.closeOnly(8) {
				return false
			}
			var ok bool
			if changed, ok = s.claimAll(); !ok {
				return false
			}
		}
		// Naked singles, a band at a time, as in propagate.
		for b := range s.cand {
			var once, twice uint32
			for _, m := range &s.cand[b] {
				twice |= once & m
				once |= m
			}
			if once != bandAll {
				return false
			}
			naked := once &^ twice & s.unsolved[b]
			if naked == 0 {
				continue
			}
			s.unsolved[b] &^= naked
			for d, a := range &s.cand[b] {
				n := a & naked
				if n == 0 {
					continue
				}
				changed |= 1 << d
				var cols uint32
				for m := n; m != 0; m &= m - 1 {
					pos := bits.TrailingZeros32(m)
					a &^= t.peers[pos]
					cols |= 1 << (pos % 9)
				}
				s.cand[b][d] = a
				clear := t.colExpand[cols]
				for o := 0; o < 3; o++ {
					if o != b {
						s.cand[o][d] &^= clear
					}
				}
			}
		}
		if changed == 0 {
			if s.unsolved[0]|s.unsolved[1]|s.unsolved[2] == 0 {
				return true
			}
			var ok bool
			if changed, ok = s.minilines(); !ok {
				return false
			}
			if changed == 0 {
				return true
			}
		}
	}
}
