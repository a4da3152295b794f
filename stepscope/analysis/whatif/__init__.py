"""What-if: replay each step's dependency graph with a fix applied and predict the new step."""
