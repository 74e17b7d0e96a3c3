//go:build amd64 && !purego

#include "textflag.h"

// func closeDigitAsm(s *state, d int, t *tables) (lost uint32, ok bool)
//
// closeDigit: the closure to its fixpoint (as closeDigit's loop), then
// hidden singles and their claims (as claim, with the band's digits 0-7 in
// one AVX2 vector).
//
// Registers: SI = &s.cand[0][d]; R8 = t; R9 = 0o111111111 (each 3-bit
// group's first bit); R10-R12 = the digit's words of bands 0-2; R13 = the
// columns of the three bands (9 bits each), then the stack patterns;
// R14 = the band patterns (minirows).
TEXT ·closeDigitAsm(SB), NOSPLIT, $0-29
	MOVQ s+0(FP), DI
	MOVQ d+8(FP), CX
	MOVQ t+16(FP), R8
	LEAQ (DI)(CX*4), SI
	MOVL $0x1249249, R9
	MOVL 0(SI), R10
	MOVL 36(SI), R11
	MOVL 72(SI), R12

loop:
	// Band 0: x = the row/box triads, n = a & bandKeep[x].
	MOVL R10, AX
	SHRL $1, AX
	MOVL R10, BX
	SHRL $2, BX
	ORL  BX, AX
	ORL  R10, AX
	PEXTL R9, AX, AX
	ANDL 1536(R8)(AX*4), R10
	MOVWLZX 512(R8)(AX*2), R14
	MOVL R10, R13
	SHRL $9, R13
	ORL  R10, R13
	MOVL R10, BX
	SHRL $18, BX
	ORL  BX, R13
	ANDL $511, R13

	// Band 1.
	MOVL R11, AX
	SHRL $1, AX
	MOVL R11, BX
	SHRL $2, BX
	ORL  BX, AX
	ORL  R11, AX
	PEXTL R9, AX, AX
	ANDL 1536(R8)(AX*4), R11
	MOVWLZX 512(R8)(AX*2), AX
	SHLL $9, AX
	ORL  AX, R14
	MOVL R11, AX
	SHRL $9, AX
	ORL  R11, AX
	MOVL R11, BX
	SHRL $18, BX
	ORL  BX, AX
	ANDL $511, AX
	SHLL $9, AX
	ORL  AX, R13

	// Band 2.
	MOVL R12, AX
	SHRL $1, AX
	MOVL R12, BX
	SHRL $2, BX
	ORL  BX, AX
	ORL  R12, AX
	PEXTL R9, AX, AX
	ANDL 1536(R8)(AX*4), R12
	MOVWLZX 512(R8)(AX*2), AX
	SHLL $18, AX
	ORL  AX, R14
	MOVL R12, AX
	SHRL $9, AX
	ORL  R12, AX
	MOVL R12, BX
	SHRL $18, BX
	ORL  BX, AX
	ANDL $511, AX
	SHLL $18, AX
	ORL  AX, R13

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
	// pattern kept, spread over its three rows (k * (1 + 2^9 + 2^18)).
	// BX collects what the stacks removed.
	MOVL $0x1C0E07, CX
	PEXTL CX, R13, AX
	IMUL3L $0x40201, AX, AX
	ANDL R10, AX
	MOVL R10, BX
	XORL AX, BX
	MOVL AX, R10
	SHLL $3, CX
	PEXTL CX, R13, AX
	IMUL3L $0x40201, AX, AX
	ANDL R11, AX
	MOVL R11, DX
	XORL AX, DX
	ORL  DX, BX
	MOVL AX, R11
	SHLL $3, CX
	PEXTL CX, R13, AX
	IMUL3L $0x40201, AX, AX
	ANDL R12, AX
	MOVL R12, DX
	XORL AX, DX
	ORL  DX, BX
	MOVL AX, R12
	// Band closure is idempotent: only a change made by the stacks can
	// give it more to do.
	TESTL BX, BX
	JNZ  loop

	MOVQ d+8(FP), CX
	SHLQ $32, R13
	ORQ  R14, R13
	MOVQ R13, 120(DI)(CX*8)

	// Hidden singles: p_b = rowSingles(a_b) & s.unsolved[b] (BX, R13, R14).
	MOVL R10, AX
	ANDL $511, AX
	MOVWLZX 5632(R8)(AX*2), BX
	MOVL R10, AX
	SHRL $9, AX
	ANDL $511, AX
	MOVWLZX 5632(R8)(AX*2), AX
	SHLL $9, AX
	ORL  AX, BX
	MOVL R10, AX
	SHRL $18, AX
	MOVWLZX 5632(R8)(AX*2), AX
	SHLL $18, AX
	ORL  AX, BX
	ANDL 108(DI), BX

	MOVL R11, AX
	ANDL $511, AX
	MOVWLZX 5632(R8)(AX*2), R13
	MOVL R11, AX
	SHRL $9, AX
	ANDL $511, AX
	MOVWLZX 5632(R8)(AX*2), AX
	SHLL $9, AX
	ORL  AX, R13
	MOVL R11, AX
	SHRL $18, AX
	MOVWLZX 5632(R8)(AX*2), AX
	SHLL $18, AX
	ORL  AX, R13
	ANDL 112(DI), R13

	MOVL R12, AX
	ANDL $511, AX
	MOVWLZX 5632(R8)(AX*2), R14
	MOVL R12, AX
	SHRL $9, AX
	ANDL $511, AX
	MOVWLZX 5632(R8)(AX*2), AX
	SHLL $9, AX
	ORL  AX, R14
	MOVL R12, AX
	SHRL $18, AX
	MOVWLZX 5632(R8)(AX*2), AX
	SHLL $18, AX
	ORL  AX, R14
	ANDL 116(DI), R14

	MOVL BX, AX
	ORL  R13, AX
	ORL  R14, AX
	JNZ  claims
	MOVL R10, 0(SI)
	MOVL R11, 36(SI)
	MOVL R12, 72(SI)
	MOVL $0, lost+24(FP)
	MOVB $1, ok+28(FP)
	RET

claims:
	// A claim gives cells p of band b to the digit: they leave
	// s.unsolved[b] and every digit's word (digits 0-7 in one vector, 8
	// alone); R9 collects the digits whose words held one of them. Y3 is
	// zero. Every instruction on X/Y registers is VEX-encoded (VMOVD, not
	// MOVL): a legacy-SSE one after a 256-bit one stalls, which made the
	// whole solver 2.5x slower.
	XORL R9, R9
	VPXOR Y3, Y3, Y3
	// Band 0: the claim, as claim does it.
	TESTL BX, BX
	JZ   noclaim0
	MOVL 108(DI), CX
	ANDNL CX, BX, CX
	MOVL CX, 108(DI)
	VMOVD BX, X1
	VPBROADCASTD X1, Y1
	VMOVDQU 0(DI), Y0
	VPANDN Y0, Y1, Y2
	VMOVDQU Y2, 0(DI)
	VPAND Y0, Y1, Y0
	VPCMPEQD Y3, Y0, Y0
	VMOVMSKPS Y0, CX
	XORL $255, CX
	ORL  CX, R9
	MOVL 32(DI), CX
	ANDNL CX, BX, DX
	MOVL DX, 32(DI)
	ANDL BX, CX
	ADDL $0x7ffffff, CX
	SHRL $27, CX
	SHLL $8, CX
	ORL  CX, R9

noclaim0:
	// Band 1: the claim, as claim does it.
	TESTL R13, R13
	JZ   noclaim1
	MOVL 112(DI), CX
	ANDNL CX, R13, CX
	MOVL CX, 112(DI)
	VMOVD R13, X1
	VPBROADCASTD X1, Y1
	VMOVDQU 36(DI), Y0
	VPANDN Y0, Y1, Y2
	VMOVDQU Y2, 36(DI)
	VPAND Y0, Y1, Y0
	VPCMPEQD Y3, Y0, Y0
	VMOVMSKPS Y0, CX
	XORL $255, CX
	ORL  CX, R9
	MOVL 68(DI), CX
	ANDNL CX, R13, DX
	MOVL DX, 68(DI)
	ANDL R13, CX
	ADDL $0x7ffffff, CX
	SHRL $27, CX
	SHLL $8, CX
	ORL  CX, R9

noclaim1:
	// Band 2: the claim, as claim does it.
	TESTL R14, R14
	JZ   noclaim2
	MOVL 116(DI), CX
	ANDNL CX, R14, CX
	MOVL CX, 116(DI)
	VMOVD R14, X1
	VPBROADCASTD X1, Y1
	VMOVDQU 72(DI), Y0
	VPANDN Y0, Y1, Y2
	VMOVDQU Y2, 72(DI)
	VPAND Y0, Y1, Y0
	VPCMPEQD Y3, Y0, Y0
	VMOVMSKPS Y0, CX
	XORL $255, CX
	ORL  CX, R9
	MOVL 104(DI), CX
	ANDNL CX, R14, DX
	MOVL DX, 104(DI)
	ANDL R14, CX
	ADDL $0x7ffffff, CX
	SHRL $27, CX
	SHLL $8, CX
	ORL  CX, R9

noclaim2:
	VZEROUPPER
	// The digit's own words last: the vector stores wrote them too.
	MOVL R10, 0(SI)
	MOVL R11, 36(SI)
	MOVL R12, 72(SI)
	MOVQ d+8(FP), CX
	BTRL CX, R9
	MOVL R9, lost+24(FP)
	MOVB $1, ok+28(FP)
	RET

fail:
	MOVL $0, lost+24(FP)
	MOVB $0, ok+28(FP)
	RET
