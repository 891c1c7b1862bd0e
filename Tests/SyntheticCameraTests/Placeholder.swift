// Placeholder so the package builds; replace me.
import Testing
