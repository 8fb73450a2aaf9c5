"""Short inline LaTeX rendered readable, flattened formulas with lost structure replaced (real
formulas from the corpus, paper ids quoted)."""

from __future__ import annotations

import pytest

from ratio.corpus.text.flatmath import lost_structure, render_tex, replace_flattened


@pytest.mark.parametrize(
    ("paper", "tex", "text"),
    [
        ("02Uc0G2Cym", r"\ell_{2}", "ℓ_2"),
        ("02Uc0G2Cym", r"\|\mathrm{X}\|_{F}", "‖X‖_F"),
        ("02Uc0G2Cym", r"\{1,\ldots,d\}", "{1,…,d}"),
        ("02Uc0G2Cym", r"\alpha=1", "α = 1"),
        ("02Uc0G2Cym", r"\mathcal{X}", "X"),
        ("2ep5PXEZiw", r"\phi_{m}", "ϕ_m"),
        ("0eRDQQK2TW", r"g:\mathbb{R}^{d}\to\mathbb{R}^{d}", "g:ℝ^d → ℝ^d"),
        ("25vRtG56YH", r"i=j\leq K", "i = j ≤ K"),
        (
            "25vRtG56YH",
            r"\mathrm{Cor}(X_{i},Y_{i})=\lambda^{2}/(\varepsilon^{2}+\lambda^{2})",
            "Cor(X_i,Y_i) = λ^2/(ε^2+λ^2)",
        ),
        # sub- and superscripts keep braces only around more than one token
        ("1YGgaouVgZ", r"x_{i}^{2}", "x_i^2"),
        ("1mJQq6zYaE", r"g^{t+1}", "g^{t+1}"),
        ("1bTG4sJ7tN", r"K\geq d^{3}", "K ≥ d^3"),
        ("1bTG4sJ7tN", r"\delta\in(0,1]", "δ ∈ (0,1]"),
        ("0qb8KoPsej", r"Y_{1}", "Y_1"),
        ("1DTCoyAFiV", r"p_{k}", "p_k"),
        ("2dtU9ZbgSN", r"M_{tr}", "M_tr"),
        ("1mdTYi1jAW", r"\hat{x}", "x̂"),
        ("0e4eiXoUn5", r"\tilde{E}", "E\u0303"),  # a combining tilde
        ("2NUFe4TZMS", r"\tau^{2}>0", "τ^2 > 0"),
        ("2Xqvk2KVAq", r"\min\{P_{t},1-P_{t}\}>0", "min{P_t,1-P_t} > 0"),
        ("1h92PmnKov", r"\frac{\alpha_{0}}{\sqrt{K}}", "α_0/√K"),
        # a command the renderer does not know, or a long formula: a placeholder
        ("sample", r"h\in\llbracket H\rrbracket", None),
        ("sample", r"\sqrt[3]{x}", None),
    ],
)
def test_render_tex(paper, tex, text):
    assert render_tex(tex) == text, paper


@pytest.mark.parametrize(
    ("paper", "flat", "out"),
    [
        # docling lost the fraction and the square of ϕ(x) = ½(f(x) − f(x⋆))²
        (
            "7GwcxPIkip",
            "Define ϕ ( x ) = 1 2 ( f ( x ) -f ( x ⋆ )) 2 . Then, we have",
            "Define [MATH] . Then, we have",
        ),
        # ... and the braces of the set {64, 16, 4}
        (
            "G8wWeZVmla",
            "as well as Flowers102 and Tiny-ImageNet (input size 3 × 64 × 64 ), G ∈ 64 , 16 , 4 ;"
            " for Skin-Lesions-14",
            "as well as Flowers102 and Tiny-ImageNet (input size 3 × 64 × 64 ), [MATH] ; for"
            " Skin-Lesions-14",
        ),
        # intact flattened formulas stay
        (
            "7GwcxPIkip",
            "Let f ( x ) be convex and define x ⋆ ∈ argmin x f ( x ) .",
            "Let f ( x ) be convex and define x ⋆ ∈ argmin x f ( x ) .",
        ),
    ],
)
def test_replace_flattened(paper, flat, out):
    assert replace_flattened(flat, "[MATH]") == out, paper
    assert lost_structure(flat) is (flat != out)
