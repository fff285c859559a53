"""Evaluation metrics: pure functions of tensors (numpy accepted), each checked in tests against an oracle.

Units: accuracies, recalls and AP in percent (0-100); hierarchical set metrics (HyCoCLIP Table 2) and
HierarCaps precision/recall as fractions (0-1); TIE and LCA in edges; Kendall tau in [-1, 1] -- each as
the papers print them.

One module per task family: `classification` (top-1, mean per-class, linear probe), `retrieval` (recall@K),
`hierarchical` (HyCoCLIP's hierarchical classification), `hierarcaps` (HierarCaps P/R and tau_d, HyperLex rho),
`detection` (COCO box AP of all-class detections), `compositional` (VG-Attribution, VL-CheckList); `checks` holds
the input checks they share (non-finite values, paired lengths).

scipy, scikit-learn and pycocotools are imported inside the functions that use them: most evaluation
processes use none of them, and together they cost seconds of start-up.
"""
