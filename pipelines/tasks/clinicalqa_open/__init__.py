"""clinicalqa-open: ClinicalQA questions answered in free text, graded by rubric (kind ``rubric``)."""
