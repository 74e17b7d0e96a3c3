//go:build amd64 && !purego

#include "textflag.h"

// BAND closes band word A (R12: band 2) of band SH/9: A = a & bandKeep[x]
// for its triads x; the kept minirows go to R14 and its columns to R13,
// both at bit SH.
#define BAND(A, SH) \
	MOVL A, AX \
	SHRL $1, AX \
	MOVL A, BX \
	SHRL $2, BX \
	ORL  BX, AX \
	ORL  A, AX \
	PEXTL R9, AX, AX \
	ANDL 1536(R8)(AX*4), A \
	MOVWLZX 512(R8)(AX*2), AX \
	SHLL $SH, AX \
	ORL  AX, R14 \
	MOVL A, AX \
	SHRL $9, AX \
	ORL  A, AX \
	MOVL A, BX \
	SHRL $18, BX \
	ORL  BX, AX \
	ANDL $511, AX \
	SHLL $SH, AX \
	ORL  AX, R13

// Hidden singles in rows: the cells of a band word alone in their row.
// At closure's fixpoint no row is empty, so subtracting 1 from each 9-bit
// row borrows within the row: a&(a-K) keeps the rows with two or more
// cells. (x&L)+L|x sets bit 8 of each row that is not zero, and a multiply
// by 511 spreads it over the row. Bands 0 and 1 go together in the halves
// of a 64-bit word, band 2 alone.
#define ROWS_K 0x0004020100040201
#define ROWS_L 0x03fdfeff03fdfeff
#define ROWS_H 0x0402010004020100

// CLAIM gives the cells P of the band at byte offset BAND (its
// digit 8 at BAND8) to the digit: they leave s.unsolved (at UNS) and every
// digit's word (digits 0-7 in one vector, 8 alone); R9 gets the digits
// whose words held one of them. Y3 is zero.
#define CLAIM(P, BAND, BAND8, UNS) \
	MOVL UNS(DI), CX \
	ANDNL CX, P, CX \
	MOVL CX, UNS(DI) \
	VMOVD P, X1 \
	VPBROADCASTD X1, Y1 \
	VMOVDQU BAND(DI), Y0 \
	VPANDN Y0, Y1, Y2 \
	VMOVDQU Y2, BAND(DI) \
	VPAND Y0, Y1, Y0 \
	VPCMPEQD Y3, Y0, Y0 \
	VMOVMSKPS Y0, CX \
	XORL $255, CX \
	ORL  CX, R9 \
	MOVL BAND8(DI), CX \
	ANDNL CX, P, DX \
	MOVL DX, BAND8(DI) \
	ANDL P, CX \
	ADDL $0x7ffffff, CX \
	SHRL $27, CX \
	SHLL $8, CX \
	ORL  CX, R9

// NAKED sets OUT to the unsolved cells (s.unsolved at UNS) of the band at
// byte offset BAND (digit 8 at BAND8) that one digit alone may take, and
// fails when a cell has no digit left. Digits 0-7 are summed pairwise in
// lanes as (once, twice): twice = t1|t2|o1&o2, once = o1|o2.
#define NAKED(BAND, BAND8, UNS, OUT) \
	VMOVDQU BAND(DI), Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPAND X1, X0, X2 \
	VPOR  X1, X0, X0 \
	VPSHUFD $0x4e, X0, X1 \
	VPSHUFD $0x4e, X2, X3 \
	VPAND X1, X0, X4 \
	VPOR  X3, X2, X2 \
	VPOR  X4, X2, X2 \
	VPOR  X1, X0, X0 \
	VPSHUFD $0xb1, X0, X1 \
	VPSHUFD $0xb1, X2, X3 \
	VPAND X1, X0, X4 \
	VPOR  X3, X2, X2 \
	VPOR  X4, X2, X2 \
	VPOR  X1, X0, X0 \
	VMOVD X0, AX \
	VMOVD X2, BX \
	MOVL BAND8(DI), CX \
	MOVL CX, DX \
	ANDL AX, DX \
	ORL  DX, BX \
	ORL  CX, AX \
	CMPL AX, $0x7ffffff \
	JNE  fail \
	ANDNL AX, BX, OUT \
	ANDL UNS(DI), OUT

// PLACE places the naked singles N of the band at byte offset BAND (digit
// 8 at BAND8, s.unsolved at UNS; the other bands at O1 and O2): they leave
// s.unsolved, and each digit holding some of them loses their peers in the
// band (t.peers, cell by cell, as nakedSingles) and their columns in the
// other bands (t.colMask); those digits join 8(SP). R9 = the digits still
// to place, CX = the digit, AX = its word, DX = its cells left, R13 = their
// columns. L1-L3 are the labels this expansion uses.
#define PLACE(N, BAND, BAND8, UNS, O1, O2, L1, L2, L3) \
	TESTL N, N \
	JZ   L3 \
	MOVL UNS(DI), AX \
	ANDNL AX, N, AX \
	MOVL AX, UNS(DI) \
	VMOVD N, X1 \
	VPBROADCASTD X1, Y1 \
	VPAND BAND(DI), Y1, Y0 \
	VPXOR Y3, Y3, Y3 \
	VPCMPEQD Y3, Y0, Y0 \
	VMOVMSKPS Y0, R9 \
	XORL $255, R9 \
	MOVL BAND8(DI), AX \
	ANDL N, AX \
	ADDL $0x7ffffff, AX \
	SHRL $27, AX \
	SHLL $8, AX \
	ORL  AX, R9 \
	ORQ  R9, 8(SP) \
L1: \
	TESTL R9, R9 \
	JZ   L3 \
	TZCNTL R9, CX \
	BLSRL R9, R9 \
	MOVL BAND(DI)(CX*4), AX \
	MOVL AX, DX \
	ANDL N, DX \
	XORL R13, R13 \
L2: \
	TZCNTL DX, BX \
	BLSRL DX, DX \
	MOVL 6656(R8)(BX*4), R14 \
	ANDNL AX, R14, AX \
	ORL  11372(R8)(BX*4), R13 \
	TESTL DX, DX \
	JNZ  L2 \
	MOVL AX, BAND(DI)(CX*4) \
	MOVL O1(DI)(CX*4), AX \
	ANDNL AX, R13, AX \
	MOVL AX, O1(DI)(CX*4) \
	MOVL O2(DI)(CX*4), AX \
	ANDNL AX, R13, AX \
	MOVL AX, O2(DI)(CX*4) \
	JMP  L1 \
L3:

// func closeAndPlaceAsm(s *state, changed uint32, t *tables) (ok bool)
//
// s.closeAndPlace(changed): the digits of changed are closed one by one
// (as closeDigit: band and stack closure to their fixpoint, then hidden
// singles and their claims, a band's digits 0-7 in one AVX2 vector); the
// digits that lose candidates while their wave runs are closed once in the
// wave. After each wave, naked singles (as nakedSingles); the digits they
// and the wave reached make the next wave, until one changes nothing. No
// return to Go in between.
//
// Registers: DI = s; R8 = t; SI = &s.cand[0][d]; R9 = 0o111111111 in
// both halves (each 3-bit group's first bit), then the digits a claim
// reached; R10 = the digit's words of bands 0 and 1 (band 1 in the high
// half), R12 = band 2's; R11 = 511 in both halves; R13 = the columns of the
// three bands (9 bits each), then the stack patterns; R14 = the band
// patterns (minirows). The naked singles phase uses R9-R14 for its own.
// Frame: 0(SP) = the digits of this wave still to close, 8(SP) = the digits
// changed for the next wave, 16(SP) = d.
TEXT ·closeAndPlaceAsm(SB), NOSPLIT, $24-25
	MOVQ s+0(FP), DI
	MOVQ t+16(FP), R8
	MOVQ $0x000001ff000001ff, R11
	MOVL changed+8(FP), AX
	MOVQ AX, 0(SP)
	MOVQ $0, 8(SP)

next:
	// d = the lowest digit left in this wave; a wave done goes on to the
	// naked singles.
	MOVQ 0(SP), AX
	TESTQ AX, AX
	JZ   naked
	TZCNTQ AX, CX
	BLSRQ AX, AX
	MOVQ AX, 0(SP)
	MOVQ CX, 16(SP)
	LEAQ (DI)(CX*4), SI
	MOVQ $0x0124924901249249, R9
	MOVL 0(SI), R10
	MOVL 36(SI), AX
	SHLQ $32, AX
	ORQ  AX, R10
	MOVL 72(SI), R12

loop:
	// Bands 0 and 1 at once (R10 = a0 | a1<<32): x = the row/box triads
	// (bits 0-8 of band 0, 9-17 of band 1), n = a & bandKeep[x].
	MOVQ R10, AX
	SHRQ $1, AX
	MOVQ R10, BX
	SHRQ $2, BX
	ORQ  BX, AX
	ORQ  R10, AX
	PEXTQ R9, AX, AX
	MOVL AX, BX
	ANDL $511, BX
	SHRL $9, AX
	MOVL 1536(R8)(BX*4), CX
	MOVL 1536(R8)(AX*4), DX
	SHLQ $32, DX
	ORQ  DX, CX
	ANDQ CX, R10
	MOVWLZX 512(R8)(BX*2), R14
	MOVWLZX 512(R8)(AX*2), DX
	SHLL $9, DX
	ORL  DX, R14
	// Their columns: R13 = band 0's | band 1's << 9.
	MOVQ R10, AX
	SHRQ $9, AX
	ORQ  R10, AX
	MOVQ R10, BX
	SHRQ $18, BX
	ORQ  BX, AX
	ANDQ R11, AX
	MOVQ AX, R13
	SHRQ $23, R13
	ORL  AX, R13

	BAND(R12, 18)

	// Stacks: gather each stack's 3x3 pattern (bands by columns) and
	// keep the cells on a permutation; an empty one is a contradiction.
	MOVL $0x1C0E07, CX
	PEXTL CX, R13, AX
	MOVWLZX 512(R8)(AX*2), AX
	TESTL AX, AX
	JZ   fail
	SHLL $3, CX
	PEXTL CX, R13, BX
	MOVWLZX 512(R8)(BX*2), BX
	TESTL BX, BX
	JZ   fail
	SHLL $3, CX
	PEXTL CX, R13, DX
	MOVWLZX 512(R8)(DX*2), DX
	TESTL DX, DX
	JZ   fail
	SHLL $9, BX
	SHLL $18, DX
	ORL  BX, AX
	ORL  DX, AX
	MOVL AX, R13

	// Back to bands: band b keeps the columns its row of every stack
	// pattern kept, spread over its three rows (k * (1 + 2^9 + 2^18)),
	// bands 0 and 1 again at once. BX collects what the stacks removed.
	MOVL $0x1C0E07, CX
	PEXTL CX, R13, AX
	IMUL3L $0x40201, AX, AX
	SHLL $3, CX
	PEXTL CX, R13, DX
	IMUL3L $0x40201, DX, DX
	SHLQ $32, DX
	ORQ  DX, AX
	ANDQ R10, AX
	MOVQ R10, BX
	XORQ AX, BX
	MOVQ AX, R10
	SHLL $3, CX
	PEXTL CX, R13, AX
	IMUL3L $0x40201, AX, AX
	ANDL R12, AX
	MOVL R12, DX
	XORL AX, DX
	ORQ  DX, BX
	MOVL AX, R12
	// Band closure is idempotent: only a change made by the stacks can
	// give it more to do.
	TESTQ BX, BX
	JNZ  loop

	MOVQ 16(SP), CX
	SHLQ $32, R13
	ORQ  R14, R13
	MOVQ R13, 120(DI)(CX*8)

	// Hidden singles of the three bands: BX, R13, R14 (see ROWS_K).
	MOVQ R10, AX
	MOVQ $ROWS_K, CX
	MOVQ AX, BX
	SUBQ CX, BX
	ANDQ AX, BX
	MOVQ $ROWS_L, DX
	MOVQ BX, R13
	ANDQ DX, R13
	ADDQ DX, R13
	ORQ  BX, R13
	MOVQ $ROWS_H, DX
	ANDQ DX, R13
	SHRQ $8, R13
	IMUL3Q $511, R13, R13
	ANDNQ AX, R13, R13
	ANDQ 108(DI), R13
	MOVL R13, BX
	SHRQ $32, R13
	MOVL R12, R14
	SUBL CX, R14
	ANDL R12, R14
	MOVL $0x3fdfeff, DX
	MOVL R14, R9
	ANDL DX, R9
	ADDL DX, R9
	ORL  R14, R9
	ANDL $0x4020100, R9
	SHRL $8, R9
	IMUL3L $511, R9, R9
	ANDNL R12, R9, R14
	ANDL 116(DI), R14

	MOVL BX, AX
	ORL  R13, AX
	ORL  R14, AX
	JNZ  claims
	MOVL R10, 0(SI)
	SHRQ $32, R10
	MOVL R10, 36(SI)
	MOVL R12, 72(SI)
	JMP  next

claims:
	// Every instruction on X/Y registers is VEX-encoded (VMOVD, not MOVL):
	// a legacy-SSE one after a 256-bit one stalls (with MOVL the solver
	// runs 2.5x slower).
	XORL R9, R9
	VPXOR Y3, Y3, Y3
	// All three bands, those without a single too (a claim of no cells
	// changes nothing and reports no digit): a branch a band that the
	// predictor cannot learn costs more than the claim.
	CLAIM(BX, 0, 32, 108)
	CLAIM(R13, 36, 68, 112)
	CLAIM(R14, 72, 104, 116)

	// The digit's own words last: the vector stores wrote them too.
	MOVL R10, 0(SI)
	SHRQ $32, R10
	MOVL R10, 36(SI)
	MOVL R12, 72(SI)
	// The other digits claimed from wait for the next wave unless they
	// are still to come in this one.
	MOVQ 16(SP), CX
	BTRL CX, R9
	MOVQ 0(SP), AX
	ANDNQ R9, AX, R9
	ORQ  R9, 8(SP)
	JMP  next

naked:
	// Naked singles: R10-R12 = the unsolved cells of bands 0-2 with one
	// candidate, all found before any is placed.
	NAKED(0, 32, 108, R10)
	NAKED(36, 68, 112, R11)
	NAKED(72, 104, 116, R12)
	PLACE(R10, 0, 32, 108, 36, 72, place0, cells0, placed0)
	PLACE(R11, 36, 68, 112, 0, 72, place1, cells1, placed1)
	PLACE(R12, 72, 104, 116, 0, 36, place2, cells2, placed2)
	// The digits this wave and its naked singles reached make the next
	// wave (NAKED took R11).
	MOVQ 8(SP), AX
	TESTQ AX, AX
	JZ   done
	MOVQ AX, 0(SP)
	MOVQ $0, 8(SP)
	MOVQ $0x000001ff000001ff, R11
	JMP  next

done:
	// Go's code may use legacy SSE: leave the upper halves clean.
	VZEROUPPER
	MOVB $1, ok+24(FP)
	RET

fail:
	VZEROUPPER
	MOVB $0, ok+24(FP)
	RET

// The masks of forced (engine.go), one 64-bit word each: g0|g1, g2, g0,
// g1|g2 (othersInGroup), r0|r1, r2, r0, r1|r2 (boxOthers).
DATA forcedMasks<>+0(SB)/8, $0x036db6db036db6db
DATA forcedMasks<>+8(SB)/8, $0x0492492404924924
DATA forcedMasks<>+16(SB)/8, $0x0124924901249249
DATA forcedMasks<>+24(SB)/8, $0x06db6db606db6db6
DATA forcedMasks<>+32(SB)/8, $0x00fc7e3f00fc7e3f
DATA forcedMasks<>+40(SB)/8, $0x070381c0070381c0
DATA forcedMasks<>+48(SB)/8, $0x001c0e07001c0e07
DATA forcedMasks<>+56(SB)/8, $0x07e3f1f807e3f1f8
GLOBL forcedMasks<>(SB), RODATA|NOPTR, $64

// FORCED sets Y3 to forced(V) for the four pattern words in V (Y4 and Y5
// are scratch, Y7-Y14 the masks).
#define FORCED(V) \
	VPSRLQ $1, V, Y3 \
	VPAND  Y7, Y3, Y3 \
	VPSLLQ $2, V, Y4 \
	VPAND  Y8, Y4, Y4 \
	VPOR   Y4, Y3, Y3 \
	VPSRLQ $2, V, Y4 \
	VPAND  Y9, Y4, Y4 \
	VPOR   Y4, Y3, Y3 \
	VPSLLQ $1, V, Y4 \
	VPAND  Y10, Y4, Y4 \
	VPOR   Y4, Y3, Y3 \
	VPSRLQ $3, V, Y5 \
	VPAND  Y11, Y5, Y5 \
	VPSLLQ $6, V, Y4 \
	VPAND  Y12, Y4, Y4 \
	VPOR   Y4, Y5, Y5 \
	VPSRLQ $6, V, Y4 \
	VPAND  Y13, Y4, Y4 \
	VPOR   Y4, Y5, Y5 \
	VPSLLQ $3, V, Y4 \
	VPAND  Y14, Y4, Y4 \
	VPOR   Y4, Y5, Y5 \
	VPAND  Y5, Y3, Y3 \
	VPANDN V, Y3, Y3

// TALLY3 sets Y3-Y5 to the lane-wise tally (at least once, twice, three
// times) of the words in Y0-Y2; Y6 is scratch.
#define TALLY3 \
	VPOR  Y1, Y0, Y3 \
	VPAND Y1, Y0, Y4 \
	VPAND Y2, Y4, Y5 \
	VPAND Y2, Y3, Y6 \
	VPOR  Y6, Y4, Y4 \
	VPOR  Y2, Y3, Y3

// MERGE sums the four lanes of the tally in Y3-Y5 (at least once, twice,
// three times): AX gets the bits counted at least three times, BX at least
// four. Two tallies A and B add as ge_k = OR over i+j = k of A_i & B_j
// (A_0 = B_0 = all ones); first the two 128-bit halves (the tally has no
// ge4 yet), then the two 64-bit lanes. X0-X2 and X10-X14 are scratch.
#define MERGE \
	VEXTRACTI128 $1, Y3, X10 \
	VEXTRACTI128 $1, Y4, X11 \
	VEXTRACTI128 $1, Y5, X12 \
	VPAND X10, X5, X13 \
	VPAND X11, X4, X14 \
	VPOR  X14, X13, X13 \
	VPAND X12, X3, X14 \
	VPOR  X14, X13, X13 \
	VPOR  X12, X5, X5 \
	VPAND X10, X4, X14 \
	VPOR  X14, X5, X5 \
	VPAND X11, X3, X14 \
	VPOR  X14, X5, X5 \
	VPOR  X11, X4, X4 \
	VPAND X10, X3, X14 \
	VPOR  X14, X4, X4 \
	VPOR  X10, X3, X3 \
	VPSHUFD $0x4e, X3, X10 \
	VPSHUFD $0x4e, X4, X11 \
	VPSHUFD $0x4e, X5, X12 \
	VPSHUFD $0x4e, X13, X14 \
	VPOR  X14, X13, X13 \
	VPAND X10, X5, X0 \
	VPOR  X0, X13, X13 \
	VPAND X11, X4, X0 \
	VPOR  X0, X13, X13 \
	VPAND X12, X3, X0 \
	VPOR  X0, X13, X13 \
	VPOR  X12, X5, X5 \
	VPAND X10, X4, X0 \
	VPOR  X0, X5, X5 \
	VPAND X11, X3, X0 \
	VPOR  X0, X5, X5 \
	VMOVQ X5, AX \
	VMOVQ X13, BX

// func forcedAllAsm(p *patterns, f *[9]uint64) (only, full uint64, todo uint32, ok bool)
//
// p.forcedAll(f): the nine pattern words in AVX2 lanes (digits 0-3, 4-7
// and 8 with three zero lanes, which change no tally), forced on each and
// both tallies summed over the lanes.
//
// Registers: SI = p; DI = f; Y0-Y2 = the pattern words, then the forced
// ones; Y7-Y14 = forced's masks; CX, DX = the patterns' tally at three
// and four.
TEXT ·forcedAllAsm(SB), NOSPLIT, $0-37
	MOVQ p+0(FP), SI
	MOVQ f+8(FP), DI
	VPBROADCASTQ forcedMasks<>+0(SB), Y7
	VPBROADCASTQ forcedMasks<>+8(SB), Y8
	VPBROADCASTQ forcedMasks<>+16(SB), Y9
	VPBROADCASTQ forcedMasks<>+24(SB), Y10
	VPBROADCASTQ forcedMasks<>+32(SB), Y11
	VPBROADCASTQ forcedMasks<>+40(SB), Y12
	VPBROADCASTQ forcedMasks<>+48(SB), Y13
	VPBROADCASTQ forcedMasks<>+56(SB), Y14
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVQ   64(SI), X2
	FORCED(Y0)
	VMOVDQU Y3, 0(DI)
	FORCED(Y1)
	VMOVDQU Y3, 32(DI)
	FORCED(Y2)
	VMOVQ   X3, 64(DI)
	TALLY3
	MERGE
	MOVQ AX, CX
	MOVQ BX, DX
	VMOVDQU 0(DI), Y0
	VMOVDQU 32(DI), Y1
	VMOVQ   64(DI), X2
	TALLY3
	MERGE
	// only = n3 &^ n4, full = f3, ok = n3 == all and f4 == 0.
	ANDNQ CX, DX, R8
	MOVQ R8, only+16(FP)
	MOVQ AX, full+24(FP)
	// todo: the digits d with p[d] & (only|full) &^ f[d] != 0, four
	// lanes a compare (VMOVMSKPD takes the lanes equal to zero), digit 8
	// alone.
	ORQ  AX, R8
	VMOVQ R8, X7
	VPBROADCASTQ X7, Y7
	VPXOR Y6, Y6, Y6
	VMOVDQU 0(DI), Y1
	VPAND 0(SI), Y7, Y0
	VPANDN Y0, Y1, Y0
	VPCMPEQQ Y6, Y0, Y0
	VMOVMSKPD Y0, R9
	VMOVDQU 32(DI), Y1
	VPAND 32(SI), Y7, Y0
	VPANDN Y0, Y1, Y0
	VPCMPEQQ Y6, Y0, Y0
	VMOVMSKPD Y0, R10
	VZEROUPPER
	SHLL $4, R10
	ORL  R10, R9
	MOVQ 64(SI), R10
	ANDQ R8, R10
	MOVQ 64(DI), R11
	ANDNQ R10, R11, R10
	SETNE R10B
	MOVBLZX R10B, R10
	SHLL $8, R10
	XORL $255, R9
	ORL  R10, R9
	MOVL R9, todo+32(FP)
	MOVQ $0x07ffffff07ffffff, R8
	XORQ CX, R8
	ORQ  BX, R8
	SETEQ ok+36(FP)
	RET

// PERM adds to Y3, at each 3x3 pattern's first bit, 1 where permutation
// (P0, P1, P2) of rows onto boxes (bands onto columns) lies on the patterns
// in V: the bits 3r+P_r for r = 0-2, brought to bit P0 by right shifts of
// S1 = 3+P1-P0 and S2 = 6+P2-P0 (both within the pattern's 9 bits), then
// to bit 0. Y6 holds each pattern's bit 0; Y4 and Y5 are scratch.
#define PERM(V, S1, S2, P0) \
	VPSRLQ $S1, V, Y4 \
	VPAND  V, Y4, Y4 \
	VPSRLQ $S2, V, Y5 \
	VPAND  Y5, Y4, Y4 \
	VPSRLQ $P0, Y4, Y4 \
	VPAND  Y6, Y4, Y4 \
	VPADDQ Y4, Y3, Y3

// PERMS sets Y3 to nperm of each of the six patterns of the words in V, at
// the pattern's bit 0 (at most 6: three bits of nine).
#define PERMS(V) \
	VPXOR Y3, Y3, Y3 \
	PERM(V, 4, 8, 0) \
	PERM(V, 5, 7, 0) \
	PERM(V, 2, 7, 1) \
	PERM(V, 4, 5, 1) \
	PERM(V, 1, 5, 2) \
	PERM(V, 2, 4, 2)

// func permCountsAsm(p *patterns, c *[9]uint64) (tot uint64)
//
// p.permCounts(c): for each digit, how many permutations lie on each of
// its six patterns, counted bit-parallel in AVX2 lanes (digits 0-3, 4-7,
// then 8), and their sums over the digits.
//
// Registers: SI = p; DI = c; Y0-Y2 = the pattern words; Y3 = a vector's
// counts; Y6 = every pattern's bit 0 (0, 9, 18, 32, 41, 50); Y7 = the sum.
TEXT ·permCountsAsm(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ c+8(FP), DI
	MOVQ $0x0004020100040201, AX
	VMOVQ AX, X6
	VPBROADCASTQ X6, Y6
	VMOVDQU 0(SI), Y0
	VMOVDQU 32(SI), Y1
	VMOVQ   64(SI), X2
	PERMS(Y0)
	VMOVDQU Y3, 0(DI)
	VMOVDQA Y3, Y7
	PERMS(Y1)
	VMOVDQU Y3, 32(DI)
	VPADDQ  Y3, Y7, Y7
	PERMS(Y2)
	VMOVQ   X3, 64(DI)
	VPADDQ  Y3, Y7, Y7
	VEXTRACTI128 $1, Y7, X8
	VPADDQ  X8, X7, X7
	VPSHUFD $0x4e, X7, X8
	VPADDQ  X8, X7, X7
	VMOVQ   X7, AX
	VZEROUPPER
	MOVQ AX, tot+16(FP)
	RET
